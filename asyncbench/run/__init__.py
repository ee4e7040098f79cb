"""Running a plan. The front door is :mod:`~asyncbench.run.runner` (engine after engine);
:mod:`~asyncbench.run.child` is an isolated engine's process and :mod:`~asyncbench.run.estimate`
what a plan will cost. The rest is in sub-packages by concern, in layers (pyproject.toml's
import-linter contract "run's sub-packages in layers"): ``checks`` (before a run starts),
``scale_out`` | ``isolated`` | ``crash``, ``sequence`` (the one phase sequence), ``observe``,
``capacity``, ``phase`` (one phase's operations) | ``reuse``.

Imports nothing itself: a child process imports only what it runs.
"""
