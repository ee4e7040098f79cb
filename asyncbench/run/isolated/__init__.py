"""Per-engine process isolation: the child process one engine runs in, its command line and arguments, and its death with its parent."""
