"""Running a plan: the runner, phase loop, isolation in a child process, signals, progress and logs."""
