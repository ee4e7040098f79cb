"""The command line: ``python -m asyncbench [COMMAND] ...``, parsed, and handed to a command.

This module only parses. Each command is a module with ``add_arguments(parser)`` (its
subparser's arguments) and ``run(args) -> int`` (the command, returning the exit code);
:data:`COMMANDS` lists them. ``run`` is the default command, so the README's
``python -m asyncbench PLAN.toml [flags]`` is ``python -m asyncbench run PLAN.toml [flags]``.
The isolated engine's process is not a command: it is ``python -m asyncbench.run.child``.
"""

from __future__ import annotations

import argparse
import importlib
import sys

import asyncbench
from asyncbench.cli.console_pipe import guard_stdout
from asyncbench.result import EXIT_BAD_INPUT

__all__ = ["COMMANDS", "DEFAULT_COMMAND", "build_parser", "main", "parse_args"]


class Command:
    """One row of :data:`COMMANDS`: the module with ``add_arguments`` and ``run``, and its
    one-line help, which is also its ``--help``'s description (a command says more in the
    epilog its ``add_arguments`` sets: a few plain lines, pointing at the docs; never a
    module docstring, whose Sphinx markup and length are a developer's, not a user's)."""

    def __init__(self, module: str, help: str, runs_engines: bool = False) -> None:
        self.module, self.help = module, help
        #: It runs engines: every plug-in is imported and checked before it starts.
        self.runs_engines = runs_engines


COMMANDS: dict[str, Command] = {
    "run": Command(
        "asyncbench.cli.run_command", "run a TOML plan against storage engines (the default command)", runs_engines=True
    ),
    "report": Command("asyncbench.cli.report", "re-render a saved result's Markdown report and charts beside it"),
    "compare": Command("asyncbench.cli.compare", "compare two results (or sets of results) phase by phase"),
    "engines": Command("asyncbench.cli.engines", "every engine this installation knows, with its settings"),
    "plan": Command("asyncbench.cli.plan", "print a TOML plan converted from YCSB's workload file (--from-ycsb)"),
    "floor": Command(
        "asyncbench.tools.floor",
        "what the harness costs per phase kind, against the plainest loop",
        runs_engines=True,
    ),
    "floor-ycsb": Command(
        "asyncbench.tools.floor_ycsb",
        "what the harness costs on YCSB's load and run phases, against the plainest loop",
        runs_engines=True,
    ),
}
DEFAULT_COMMAND = "run"
#: Flags of the top-level parser itself (anything else before a command means ``run``).
TOP_LEVEL_FLAGS = ("-h", "--help", "--version")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The top-level parser with one subparser per command. Its help lists the commands,
    then the default command's (``run``'s) own help, since most invocations are runs.

    With ``command``, only that command's module is imported and given its arguments (the
    others stay listed): ``python -m asyncbench engines`` does not import the run's
    pipeline or the floor tool."""
    top = argparse.ArgumentParser(
        prog="python -m asyncbench",
        usage="python -m asyncbench [run] PLAN.toml [flags] | COMMAND ...",
        description="Run the profile-store benchmark plan in a TOML file against storage engines.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    top.add_argument("--version", action="version", version=f"asyncbench {asyncbench.__version__}")
    sub = top.add_subparsers(dest="command", title="commands", metavar="COMMAND")
    for name, row in COMMANDS.items():
        prog = "python -m asyncbench [run]" if name == DEFAULT_COMMAND else f"python -m asyncbench {name}"
        if command is not None and name != command:
            sub.add_parser(name, prog=prog, help=row.help)  # listed; its arguments are not needed
            continue
        module = importlib.import_module(row.module)
        p = sub.add_parser(
            name,
            prog=prog,
            help=row.help,
            description=row.help[0].upper() + row.help[1:] + ".",
            # run's epilog is laid out by hand; another command's is reflowed unless it says
            # otherwise (its add_arguments may set a raw formatter for its examples)
            formatter_class=argparse.RawDescriptionHelpFormatter if name == DEFAULT_COMMAND else argparse.HelpFormatter,
        )
        module.add_arguments(p)
        p.set_defaults(handler=module.run, parser=p)
        if name == DEFAULT_COMMAND:
            top.epilog = (
                f"'{DEFAULT_COMMAND}' is the default command: python -m asyncbench PLAN.toml [flags]\n"
                "runs a plan. Each command has --help.\n\n" + p.format_help()
            )
    return top


def parse_args(argv: list[str]) -> argparse.Namespace:
    """``argv`` parsed; without a command first, ``run`` is the command."""
    if not argv or (argv[0] not in COMMANDS and argv[0] not in TOP_LEVEL_FLAGS):
        argv = [DEFAULT_COMMAND, *argv]
    args, extra = build_parser(argv[0] if argv[0] in COMMANDS else None).parse_known_args(argv)
    if extra:  # the command's own usage, not the top-level one (which is the run's)
        parser = getattr(args, "parser", None)
        if isinstance(parser, argparse.ArgumentParser):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        raise SystemExit(EXIT_BAD_INPUT)
    return args


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    from asyncbench.engines import PLUGIN_ERRORS
    from asyncbench.workloads import WORKLOAD_ERRORS

    if (PLUGIN_ERRORS or WORKLOAD_ERRORS) and not {"-h", "--help", "--version"} & set(argv):
        for error in [*PLUGIN_ERRORS, *WORKLOAD_ERRORS]:
            print(f"asyncbench: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    command = COMMANDS.get(argv[0] if argv else DEFAULT_COMMAND, COMMANDS[DEFAULT_COMMAND])
    if command.runs_engines and not {"-h", "--help", "--version"} & set(argv):
        from asyncbench.engines import plugin_load_errors

        broken = plugin_load_errors()  # every plug-in, not only those this run names
        for error in broken:
            print(f"asyncbench: {error}", file=sys.stderr)
        if broken:
            return EXIT_BAD_INPUT
    args = parse_args(argv)
    guard_stdout()  # `asyncbench run PLAN | head`: the run goes on without its console
    code: int = args.handler(args)
    return code
