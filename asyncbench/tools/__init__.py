"""Developer-facing commands built on the framework: benchmarks of the harness itself.

Each tool module exposes ``add_arguments(parser)`` and ``run(args) -> int`` (the exit
code), so the CLI can mount it as a subcommand; ``floor`` is ``python -m asyncbench
floor``. The layer sits between ``asyncbench.cli`` and ``asyncbench.run``: a tool drives
the runner's own phase loop, the CLI only dispatches to it. ``store`` builds a benchmark's
store the way a run does; the scripts under ``benchmarks/`` share it.
"""
