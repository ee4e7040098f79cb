"""``python -m asyncbench engines``: every engine this installation knows, where it comes
from (built in, an ``asyncbench.engines`` entry point or ASYNCBENCH_ENGINES) and the settings a plan may give it, with defaults.

So a user can see what ``[engines.<name>]`` accepts, and whether a plug-in loads, without
starting a run.
"""

from __future__ import annotations

import argparse
import inspect
import textwrap

from asyncbench.engine import EngineUnavailable
from asyncbench.result import EXIT_BAD_INPUT, EXIT_OK


def description(doc: str | None) -> str:
    """An engine class's docstring's first paragraph, on one line: what the engine is."""
    paragraph = inspect.cleandoc(doc or "").split("\n\n", 1)[0]
    return " ".join(paragraph.replace("``", "").split())  # reST literals read plainly on a terminal


def add_arguments(p: argparse.ArgumentParser) -> None:
    """No arguments: every engine is listed."""


def run(args: argparse.Namespace) -> int:
    from asyncbench.engines import PLUGINS, REGISTRY, engine_class

    broken = False
    for name, target in REGISTRY.items():
        origin = f"plug-in from {PLUGINS[name]}" if name in PLUGINS else "built in"
        print(f"{name}  ({origin}: {target})")
        try:
            cls = engine_class(name)
        except EngineUnavailable as exc:
            print(f"  not available: {exc}")
            broken = broken or name in PLUGINS
            continue
        about = description(cls.__doc__)
        if about:
            print(textwrap.fill(about, 80, initial_indent="  ", subsequent_indent="  ", break_on_hyphens=False))
        if not cls.default_settings:
            print("  settings: none")
        sources = cls.setting_sources()
        for key, value in cls.default_settings.items():
            source = f" ({sources[key]})" if key in sources else ""
            print(f"  [engines.{name}] {key} = {value!r}{source}  ({type(value).__name__})")
    return EXIT_BAD_INPUT if broken else EXIT_OK
