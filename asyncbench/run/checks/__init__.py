"""Before a run starts: its whole config validated, what it will cost estimated, and a run that cannot fit this machine or the harness refused."""
