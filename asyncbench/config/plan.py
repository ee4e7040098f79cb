"""Loading a plan file: the top level that composes the table readers into one ``BenchConfig``.

Everything is checked before anything runs or is written: a bad file or flag raises
``ConfigError`` naming the file, the key and the reason, and the CLI exits with code 2.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from asyncbench.config.capacity import slo_table
from asyncbench.config.counts import read_counts
from asyncbench.config.engines import engine_settings
from asyncbench.config.errors import ConfigError
from asyncbench.config.model import BenchConfig
from asyncbench.config.phases import check_phase_counts, read_phases
from asyncbench.config.run_keys import RUN_KEYS, apply_run_key, one_spelling
from asyncbench.workload import SettingError
from asyncbench.workload_capabilities import OwnSettings

TOP_KEYS = {"run", "counts", "engines", "phase", "slo"}
#: The largest plan file read: the reference plan is 2 KB; a plan of megabytes is not one
#: a person wrote, and parsing it would take the time and memory its size says.
MAX_PLAN_BYTES = 1024 * 1024
#: The [run] key of the store's size, as a plan may spell it (records, or profiles).
SIZE_KEYS = (RUN_KEYS["profiles"].name, *RUN_KEYS["profiles"].plan_aliases)


def load(path: str | Path) -> BenchConfig:
    """Parse and validate a plan file."""
    from asyncbench.fs.inputs import InputError, read_input

    where = str(path)
    try:
        raw = read_input(Path(path), MAX_PLAN_BYTES, "a plan")
    except InputError as exc:
        raise ConfigError(where, "file", exc.reason) from None
    try:
        text = raw.decode("utf-8-sig")  # a UTF-8 byte order mark is not part of the TOML
    except UnicodeDecodeError:
        raise ConfigError(where, "file", "is not UTF-8 text") from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        if looks_like_ycsb_file(text):
            raise ConfigError(where, "file", ycsb_file_hint(where)) from None
        raise ConfigError(where, "syntax", str(exc)) from None
    except RecursionError:
        raise ConfigError(where, "syntax", "arrays or tables are nested too deeply") from None
    return from_document(doc, where)


#: a line of a YCSB workload file (Java properties) that no TOML plan has: ``recordcount=1000``,
#: ``workload=site.ycsb.workloads.CoreWorkload``, ``readproportion=0.5`` (YCSB's own keys)
_YCSB_LINE = re.compile(
    r"^[ \t]*(recordcount|operationcount|workload|[a-z]+proportion|requestdistribution)[ \t]*[=:][ \t]*\S",
    re.MULTILINE,
)


def looks_like_ycsb_file(text: str) -> bool:
    """A YCSB workload file given where a plan is expected (it is no TOML, or TOML without
    ``[run]``): said so, instead of a TOML syntax error."""
    return _YCSB_LINE.search(text) is not None


def ycsb_file_hint(where: str) -> str:
    return (
        "is a YCSB workload file (Java properties), not a TOML plan: run it with "
        f"-P {where} (and -p KEY=VALUE to set a property), or convert it with "
        f"python -m asyncbench plan --from-ycsb {where}"
    )


def from_document(doc: dict[str, Any], where: str) -> BenchConfig:
    """The plan ``doc`` (read from ``where``) as a checked config. Its ``[run] workload``
    (default: the profile store) is read first and carried by the config
    (``BenchConfig.workload``): every later key, section and phase is checked against that
    workload's vocabulary, and everything that runs or reports the plan reads it there."""
    cfg = BenchConfig(source=where)
    run = doc.get("run", {})
    if isinstance(run, dict) and "workload" in run:  # first: it decides the other keys' vocabulary
        apply_run_key(cfg, where, "run.workload", "workload", run["workload"])
    wl = cfg.workload_impl
    own = wl if isinstance(wl, OwnSettings) else None  # a plan table of its own (YCSB's [ycsb])
    section = own.section if own is not None else None
    allowed = TOP_KEYS | ({section} if section else set())
    unknown = set(doc) - allowed
    if unknown and "run" not in doc and {"recordcount", "operationcount"} & unknown:
        raise ConfigError(where, "file", ycsb_file_hint(where))  # YCSB properties that parse as TOML
    if unknown:
        raise ConfigError(
            where, sorted(unknown)[0], f"unknown top-level key; allowed: {', '.join(sorted(allowed))}"
        )
    if not isinstance(run, dict):
        raise ConfigError(where, "run", "must be a table")
    one_spelling(where, run)
    for k, v in run.items():
        apply_run_key(cfg, where, f"run.{k}", k, v)
    cfg.size_key = next((k for k in SIZE_KEYS if k in run), cfg.size_key)
    if own is not None and section:
        table = doc.get(section)
        if not isinstance(table, dict):
            raise ConfigError(where, section, f"the {cfg.workload} workload needs a [{section}] table")
        try:
            cfg.workload_settings = own.settings(table)
        except SettingError as exc:
            raise ConfigError(where, f"{section}.{exc.key}", exc.problem) from None
        size = own.size(cfg.workload_settings)
        if size is not None and not any(k in run for k in SIZE_KEYS):
            cfg.profiles = [size]  # the workload's size; run.records and --records override it
    cfg.counts = read_counts(where, doc.get("counts", {}), wl)
    cfg.engine_settings = engine_settings(where, doc.get("engines", {}))
    cfg.phases = read_phases(where, doc.get("phase"), wl, cfg.workload_settings)
    if "slo" in doc:
        slo_table(cfg, where, doc["slo"])
    check_phase_counts(cfg, where)
    check_repeats(cfg, where)
    return cfg


def check_pacing(cfg: BenchConfig, where: str, key: str) -> None:
    """``arrivals`` spaces the start times of the phases the run's ``rate`` paces: without
    a rate it changes nothing, and the run would be closed loop while the user asked for
    an arrival process (a phase's own rate takes its own ``arrivals``)."""
    if cfg.arrivals != "uniform" and not cfg.rate:
        raise ConfigError(
            where, key, f"paces the phases of --rate or run.rate, and there is none; {cfg.arrivals!r} needs a rate"
        )


def check_repeats(cfg: BenchConfig, where: str) -> None:
    """At least one measured repeat must remain after the warm-ups."""
    if cfg.warmup >= cfg.repeat:
        raise ConfigError(
            where, "warmup", f"{cfg.warmup} warm-up repeat(s) leave nothing to measure of repeat = {cfg.repeat}"
        )
