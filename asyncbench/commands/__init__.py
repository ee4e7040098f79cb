"""The program's commands: ``run`` (the default) and ``report``; each returns an exit code."""
