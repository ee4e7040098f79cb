"""Watching a run without changing it: observers, the JSON log, progress and status lines, event-loop holds, stop signals and the garbage-collector policy."""
