"""Code that runs INSIDE the sandbox: stdlib only, shipped to the interpreter as source by the host."""
