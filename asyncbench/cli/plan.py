"""``python -m asyncbench plan --from-ycsb FILE``: YCSB's workload file as a TOML plan.

YCSB's own files (``workloads/workloada`` ... of YCSB's repository), unchanged, become a
plan on standard output (``> plan.toml``); every property is carried or refused by name
(docs/workloads.md). Bad input (a file that cannot be read, an unknown or unsupported
property such as ``db``, proportions not summing to 1) is an error naming the file, the
property and the problem (every one of the file at once), exit 2, nothing printed on
standard output. A property accepted without being carried (``zipfianconstant``, which
YCSB ignores; measurement settings) is a note on standard error. The conversion is
the workload's (reached through the registry, as every workload is).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from asyncbench.fs.inputs import InputError, read_input
from asyncbench.result import EXIT_BAD_INPUT, EXIT_OK
from asyncbench.workload_capabilities import PlanConversion
from asyncbench.workloads import workload

#: A YCSB workload file is a few KB; one of megabytes is not one.
MAX_FILE_BYTES = 1024 * 1024


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--from-ycsb",
        metavar="FILE",
        required=True,
        help="a YCSB workload file (Java properties, e.g. YCSB's workloads/workloada): its plan is printed",
    )


def run(args: argparse.Namespace) -> int:
    path = Path(args.from_ycsb)
    try:
        raw = read_input(path, MAX_FILE_BYTES, "a YCSB workload file")
    except InputError as exc:
        print(f"asyncbench: {path}: file: {exc.reason}", file=sys.stderr)
        return EXIT_BAD_INPUT
    ycsb = workload("ycsb")
    assert isinstance(ycsb, PlanConversion)  # YCSB's workload files are its own format
    try:
        plan = ycsb.plan_from_native(raw.decode("latin-1"), str(path))  # Java's .properties encoding
    except ValueError as exc:
        print(f"asyncbench: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for note in plan.notes:  # also comments in the plan; said here so a redirect does not hide them
        print(f"asyncbench: note: {note}", file=sys.stderr)
    sys.stdout.write(plan.text)
    return EXIT_OK
