"""Provenance on the workers: a file's record built from the log (`record`) and its calls made again (`rerun`)."""
