"""The reference plan at growing profile counts, one engine at a time: one scaling table.

Why: issue 24 asks how the engines (and the harness) behave as the store grows, from
200_000 to 10_000_000 profiles. The figures must be the ones a user sees, so this script
times nothing itself: for each count and engine it runs the CLI on the reference plan
(``benchmarks.toml``, ``isolate = true``: the engine in a fresh child process, so its peak
RSS is its own) with that one engine, or reads an earlier result JSON instead
(``--ingest``: a file or a directory of results, e.g. a long 10M run made apart), and
prints one markdown table: per phase seconds and ops/s per engine, the stabilizations,
settle and reopen, the whole run, peak RSS and the harness's share of it, storage, and
lsm/rocksdb time ratios (below 1: the LSM is faster).

The harness's share is measured, not guessed: at each count the same plan also runs
through a no-op engine (``harness_memory.py``'s, in its own child process); its peak RSS
above its RSS at engine start is what the harness itself grows by at that count.

Engines run one after the other, never side by side; with ``--repeat R`` the order is
interleaved (lsm rocksdb lsm rocksdb ...), each cell is the median over the repeats and
each ratio the median of the per-repeat ratios (neighbours in time). Checksums must be
equal across the engines at each count, or the script exits 1.

Usage (from the repository's root)::

    .venv/bin/python benchmarks/bench_scaling.py --profiles 200k,1M,2M,10M --out scaling
    .venv/bin/python benchmarks/bench_scaling.py --profiles 200k,2M,10M --ingest /path/to/10m-results
    .venv/bin/python benchmarks/bench_scaling.py --profiles 2k --engines lsm,rocksdb --no-harness
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from asyncbench.fmt import count as fmt_count
from asyncbench.fmt import parse_count
from asyncbench.fmt import size as fmt_size
from asyncbench.result import EngineResult, RunResult

ROOT = Path(__file__).resolve().parent.parent
MIB = 1024 * 1024
#: The harness's growth above its RSS at engine start must stay under this (issue 24).
HARNESS_LIMIT_MIB = 64
NOOP = "noop"


@dataclass
class Cells:
    """Every result of one engine at one profile count (a repeat each), in run order."""

    runs: list[EngineResult] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    #: (estimate seconds, basis, that run's seconds): the estimate the CLI printed before a run
    estimates: list[tuple[float, str, float]] = field(default_factory=list)


#: The CLI's size estimate, printed before a run: ``  time: about 3 h 10 min``.
ESTIMATE_LINE = re.compile(r"^  time: about (?:(\d+) h ?)?(?:(\d+) min)?(?:(\d+) s)?$")


def parse_estimate(stdout: str) -> tuple[float, str] | None:
    """(seconds, ``calibration`` or ``history``) from the CLI's printed estimate, if any."""
    lines = stdout.splitlines()
    for i, line in enumerate(lines):
        m = ESTIMATE_LINE.match(line)
        if m:
            h, mins, secs = (int(g) if g else 0 for g in m.groups())
            rest = " ".join(lines[i + 1 : i + 4])
            return 3600 * h + 60 * mins + secs, "calibration" if "calibration" in rest else "history"
    return None


Table = dict[int, dict[str, Cells]]


def ingest(paths: Sequence[Path], plan_name: str, table: Table) -> None:
    """Add the P1 results of ``plan_name`` found in ``paths`` (files, or directories searched
    for ``asyncbench-*.json``) to ``table``; other results are named and skipped."""
    for path in paths:
        if not path.exists():
            print(f"bench_scaling.py: --ingest {path}: no such file or directory", file=sys.stderr)
            raise SystemExit(2)
        files = sorted(path.rglob("asyncbench-*.json")) if path.is_dir() else [path]
        if not files:
            print(
                f"bench_scaling.py: --ingest {path}: no result JSON (asyncbench-*.json) in it",
                file=sys.stderr,
            )
            raise SystemExit(2)
        for f in files:
            try:
                run = RunResult.from_json(f.read_bytes())
            except Exception as exc:  # noqa: BLE001 - name the file, keep going
                print(f"skipped {f}: not a result ({type(exc).__name__}: {exc})", file=sys.stderr)
                continue
            if run.name != plan_name or run.parallelism != 1:
                print(
                    f"skipped {f}: plan {run.name!r} P{run.parallelism}, not {plan_name!r} P1",
                    file=sys.stderr,
                )
                continue
            for e in run.engines:
                if not e.warmup:
                    cells = table[run.profiles][e.engine]
                    cells.runs.append(e)
                    cells.sources.append(str(f))
                    note = f.with_suffix(".estimate.txt")
                    if len(run.engines) == 1 and note.is_file():  # written by run_one below
                        seconds, basis = note.read_text().split(maxsplit=1)
                        cells.estimates.append((float(seconds), basis.strip(), e.run_seconds))


def run_one(plan: Path, engine: str, profiles: int, out: Path, extra: Sequence[str]) -> Path:
    """One engine at one count through the CLI (its own child process); the new result's path."""
    results = out / "results"
    before = set(results.rglob("asyncbench-*.json")) if results.exists() else set()
    env = dict(os.environ)
    if engine == NOOP:
        env["ASYNCBENCH_ENGINES"] = "noop=harness_memory:NoopEngine"
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "benchmarks"), env.get("PYTHONPATH")]))
    cmd = [
        sys.executable, "-m", "asyncbench", str(plan), "--engine", engine, "--profiles", str(profiles),
        "--output", str(results), "--data", str(out / "data"), "--yes", "--no-progress", "--quiet", *extra,
    ]  # fmt: skip
    print("$ " + " ".join(cmd[1:]), file=sys.stderr, flush=True)
    proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    new = sorted(set(results.rglob("asyncbench-*.json")) - before) if results.exists() else []
    if not new:
        raise SystemExit(f"{engine} at {profiles:_d}: exit {proc.returncode} and no result JSON")
    got = parse_estimate(proc.stdout)
    if got is not None:  # the size estimate the CLI printed, kept beside the result (item 4's check)
        new[-1].with_suffix(".estimate.txt").write_text(f"{got[0]} {got[1]}\n")
    return new[-1]


def median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def ok_runs(cells: Cells | None) -> list[EngineResult]:
    return [e for e in cells.runs if e.ok] if cells else []


def phase_seconds(runs: Sequence[EngineResult], index: int) -> list[float]:
    out = []
    for e in runs:
        p = e.phase_at(index)
        if p is not None and not p.skipped:
            out.append(p.seconds)
    return out


def ratio(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Median of the per-repeat ratios a[k]/b[k] (repeat k of one next to repeat k of the other)."""
    pairs = [x / y for x, y in zip(a, b, strict=False) if y > 0]
    return statistics.median(pairs) if pairs else None


def time_cell(seconds: Sequence[float], ops: int) -> str:
    s = median(seconds)
    if s is None:
        return "–"
    if ops and s > 0:
        return f"{s:.2f} s · {fmt_count(round(ops / s))}/s"
    return f"{s:.2f} s"


def mib(values: Sequence[int | None]) -> str:
    """Median size in binary units (``1.4 GB``), as the reports print it."""
    got = [v for v in values if v]
    return fmt_size(round(statistics.median(got))) if got else "–"


def fmt_ratio(r: float | None) -> str:
    return "–" if r is None else f"{r:.2f}"


def render(table: Table, counts: Sequence[int], engines: Sequence[str]) -> tuple[str, int]:
    """The markdown table, and how many (count, phase) checksums differ across the engines."""
    ratio_col = "lsm" in engines and "rocksdb" in engines
    head = ["phase"]
    for n in counts:
        head += [f"{e} {fmt_count(n)}" for e in engines] + (
            [f"lsm/rocksdb {fmt_count(n)}"] if ratio_col else []
        )
    lines = ["| " + " | ".join(head) + " |", "| --- |" + " ---: |" * (len(head) - 1)]
    phases = None  # names and indexes from the first complete result
    for n in counts:
        for e in engines:
            runs = ok_runs(table[n].get(e))
            if runs and phases is None:
                phases = [(p.index, p.name, p.ops > 0) for p in runs[0].phases]
    mismatches = 0
    for index, name, _ in phases or []:
        row = [name]
        for n in counts:
            sums: set[str] = set()
            for e in engines:
                runs = ok_runs(table[n].get(e))
                ops = next((p.ops for r in runs if (p := r.phase_at(index))), 0)
                row.append(time_cell(phase_seconds(runs, index), ops))
                sums |= {p.checksum for r in runs if (p := r.phase_at(index)) and p.checksum}
            if len(sums) > 1:
                mismatches += 1
                row[-1] += " **checksums differ**"
            if ratio_col:
                a = phase_seconds(ok_runs(table[n].get("lsm")), index)
                b = phase_seconds(ok_runs(table[n].get("rocksdb")), index)
                row.append(fmt_ratio(ratio(a, b)))
        lines.append("| " + " | ".join(row) + " |")

    def metric(label: str, cell, both=None) -> None:
        row = [label]
        for n in counts:
            row += [cell(n, ok_runs(table[n].get(e))) for e in engines]
            if ratio_col:
                row.append(both(n) if both else "")
        lines.append("| " + " | ".join(row) + " |")

    def runs_ratio(n: int, get) -> str:
        a = [get(e) for e in ok_runs(table[n].get("lsm"))]
        b = [get(e) for e in ok_runs(table[n].get("rocksdb"))]
        return fmt_ratio(ratio([x for x in a if x], [y for y in b if y]))

    metric(
        "**whole run**",
        lambda n, runs: f"**{median([e.run_seconds for e in runs]):.1f} s**" if runs else "–",
        lambda n: f"**{runs_ratio(n, lambda e: e.run_seconds)}**",
    )
    first = counts[0]

    def insert_vs_first(n: int, runs: Sequence[EngineResult], engine: str) -> str:
        def rate(rs: Sequence[EngineResult]) -> float | None:
            got = [p.ops_per_s for e in rs for p in e.phases if p.kind.kind == "insert" and p.seconds > 0]
            return median(got)

        a, b = rate(runs), rate(ok_runs(table[first].get(engine)))
        return f"{a / b:.2f}x" if a and b else "–"

    row = [f"insert ops/s vs {fmt_count(first)}"]
    for n in counts:
        row += [insert_vs_first(n, ok_runs(table[n].get(e)), e) for e in engines] + (
            [""] if ratio_col else []
        )
    lines.append("| " + " | ".join(row) + " |")
    metric(
        "peak RSS",
        lambda n, runs: mib([e.peak_rss_bytes for e in runs]),
        lambda n: runs_ratio(n, lambda e: e.peak_rss_bytes),
    )
    metric("RSS at engine start", lambda n, runs: mib([e.initial_rss_bytes for e in runs]))
    metric(
        "peak RSS, anonymous (the process's own)",
        lambda n, runs: mib([e.peak_rss_anon_bytes for e in runs]),
        lambda n: runs_ratio(n, lambda e: e.peak_rss_anon_bytes),
    )
    metric(
        "peak RSS, file-backed (mapped files)",
        lambda n, runs: mib([e.peak_rss_file_bytes for e in runs]),
    )

    def harness(n: int, runs: Sequence[EngineResult]) -> str:
        noop = ok_runs(table[n].get(NOOP))
        growth = [
            e.peak_rss_bytes - e.initial_rss_bytes for e in noop if e.peak_rss_bytes and e.initial_rss_bytes
        ]
        peak = median([e.peak_rss_bytes for e in runs if e.peak_rss_bytes])
        if not growth or not peak:
            return "–"
        g = statistics.median(growth)
        return f"{fmt_size(round(g))} ({100 * g / peak:.1f} %)"

    metric(f"harness growth (share of peak; limit {HARNESS_LIMIT_MIB} MB)", harness)
    metric(
        "storage",
        lambda n, runs: mib([e.storage_bytes for e in runs]),
        lambda n: runs_ratio(n, lambda e: e.storage_bytes),
    )

    def estimated(n: int, runs: Sequence[EngineResult], engine: str) -> str:
        """The printed estimates (median) and the median of estimate / that run's time."""
        cells = table[n].get(engine)
        if not cells or not cells.estimates or not runs:
            return "–"
        est = [s for s, _, _ in cells.estimates]
        ratios = [s / took for s, _, took in cells.estimates if took > 0]
        basis = "/".join(sorted({b for _, b, _ in cells.estimates}))
        return f"{statistics.median(est) / 60:.1f} min ({basis}): {statistics.median(ratios):.2f}x"

    row = ["estimate printed before the run: estimate/measured"]
    for n in counts:
        row += [estimated(n, ok_runs(table[n].get(e)), e) for e in engines] + ([""] if ratio_col else [])
    lines.append("| " + " | ".join(row) + " |")
    row = ["runs (ok/all)"]
    for n in counts:
        row += [
            f"{len(ok_runs(table[n].get(e)))}/{len(table[n][e].runs) if e in table[n] else 0}"
            for e in engines
        ]
        row += [""] if ratio_col else []
    lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines), mismatches


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--profiles", default="200k,1M,2M,10M", help="comma list of counts (default 200k,1M,2M,10M)"
    )
    ap.add_argument("--engines", default="lsm,rocksdb,sqlite", help="comma list (default lsm,rocksdb,sqlite)")
    ap.add_argument("--sqlite-max", default="2M", help="largest count sqlite runs at (default 2M)")
    ap.add_argument("--repeat", type=int, default=1, help="interleaved runs per engine and count (default 1)")
    ap.add_argument(
        "--plan", type=Path, default=ROOT / "benchmarks.toml", help="plan (default benchmarks.toml)"
    )
    ap.add_argument(
        "--ingest", type=Path, action="append", default=[],
        help="an earlier result JSON, or a directory of them: its (count, engine) cells are not re-run",
    )  # fmt: skip
    ap.add_argument(
        "--out", type=Path, help="keep the new runs' results (and data) here (default: a temp dir)"
    )
    ap.add_argument("--no-harness", action="store_true", help="skip the no-op engine runs (harness share)")
    ap.add_argument("--table", type=Path, help="also write the markdown table to this file")
    ap.add_argument("extra", nargs="*", help="more asyncbench flags for the new runs, after --")
    args = ap.parse_args(argv)
    counts = [parse_count(c) for c in args.profiles.split(",")]
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    sqlite_max = parse_count(args.sqlite_max)
    plan_name = _plan_name(args.plan)
    table: Table = defaultdict(dict)
    for n in counts:
        table[n] = defaultdict(Cells)
    ingest(args.ingest, plan_name, table)
    wanted = [*engines, *([] if args.no_harness else [NOOP])]
    with tempfile.TemporaryDirectory(prefix="asyncbench-scaling-") as tmp:
        out = args.out or Path(tmp)
        for n in counts:
            todo = [e for e in wanted if not (e == "sqlite" and n > sqlite_max)]
            for k in range(args.repeat):
                for e in todo:
                    if e == NOOP and k > 0:
                        continue  # the harness's share is one figure per count
                    if len(table[n][e].runs) > k:
                        continue  # ingested (or already run)
                    path = run_one(args.plan, e, n, out, args.extra)
                    ingest([path], plan_name, table)
    text, mismatches = render(table, counts, engines)
    sources = sorted({s for n in counts for c in table[n].values() for s in c.sources})
    print(text)
    if args.table:
        args.table.write_text(text + "\n")
    print(f"\n{len(sources)} result file(s); cells: median over repeats; ratios: median of per-repeat ratios")
    if mismatches:
        print(f"CHECKSUMS DIFFER across the engines in {mismatches} (count, phase) cell(s)")
        return 1
    return 0


def _plan_name(plan: Path) -> str:
    import tomllib

    return tomllib.loads(plan.read_text()).get("run", {}).get("name", "")


if __name__ == "__main__":
    raise SystemExit(main())
