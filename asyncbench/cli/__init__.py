"""The command line: parsing and the commands (run, report, compare, engines)."""
