"""Per-engine process isolation, parent side: the child process one engine runs in (its side is :mod:`asyncbench.run.child`), its command line and arguments, and its death with its parent."""
