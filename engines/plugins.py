"""Plug-in engines (an ``asyncbench.engines`` entry point or ``ASYNCBENCH_ENGINES``),
checked before anything runs.

A plug-in is the user's own code: an import error is about their module and their
PYTHONPATH or install (never "pip install" advice), and a class that misses part of the
engine lifecycle is refused up front instead of failing after the last phase. An engine
normally hands out primitives from ``worker(i)`` (key/value stores or a SQL session, see
``examples/sorted_list_engine.py``), over which every workload builds its store; an
engine that keeps ``Engine.worker`` is its own store, and the run's preflight checks it
implements that workload's operations (``OwnStoreEngines.own_store_problem``).
"""

from __future__ import annotations

import importlib
import traceback

from asyncbench.engine import Engine, EngineUnavailable, cost_growth_problem

__all__ = ["PluginError", "load_plugin"]


class PluginError(EngineUnavailable):
    """A plug-in engine that cannot run; the message says what to fix."""


def load_plugin(name: str, module_name: str, class_name: str, origin: str) -> type[Engine]:
    """The plug-in's class, checked; ``origin`` says where it was registered (for messages)."""
    where = f"engine {name!r} ({origin}: {name}={module_name}:{class_name})"
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            raise PluginError(
                f"{where}: cannot import module {module_name!r}: {exc}; is its directory on PYTHONPATH?"
            ) from exc
        raise PluginError(f"{where}: importing {module_name!r} failed: {exc}") from exc
    except Exception as exc:
        last = traceback.extract_tb(exc.__traceback__)[-1]
        raise PluginError(
            f"{where}: importing {module_name!r} failed: {type(exc).__name__}: {exc} "
            f"({last.filename}, line {last.lineno})"
        ) from exc
    cls = getattr(module, class_name, None)
    if cls is None:
        raise PluginError(f"{where}: module {module_name!r} has no attribute {class_name!r}")
    if not (isinstance(cls, type) and issubclass(cls, Engine)):
        raise PluginError(f"{where}: {class_name} is not a subclass of asyncbench.engine.Engine")
    abstract = sorted(getattr(cls, "__abstractmethods__", ()))
    if abstract:
        raise PluginError(f"{where}: {class_name} does not implement {', '.join(abstract)}")
    if not getattr(cls, "name", None):
        raise PluginError(f"{where}: {class_name} sets no class attribute 'name'")
    problem = cost_growth_problem(cls.cost_growth)
    if problem is not None:  # the estimate reads it before the run starts (asyncbench.run.estimate)
        raise PluginError(f"{where}: {class_name}.cost_growth: {problem}")
    return cls
