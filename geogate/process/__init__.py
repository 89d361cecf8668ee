"""Process plumbing shared by every role: children that die with their parent (`lifetime`), a start-up heap kept
out of the garbage collector's full passes (`memory`)."""
