"""The Markdown report, in the reference report's sections and number style.

Text the report did not write (plan, phase and engine names, paths, settings, errors)
goes through :mod:`asyncbench.report.markdown` (``md.text`` / ``md.code``), so it renders as
itself and never as a heading, link, HTML or an extra table cell.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from operator import itemgetter
from urllib.parse import quote

from asyncbench import fmt
from asyncbench.config import RUN_KEYS
from asyncbench.facts import Durability, MemoryScope, StorageMethod
from asyncbench.fs.ownership import REPORT_MARKER
from asyncbench.measure.aggregate import EngineRuns, collapse, group_runs, unstable_phases
from asyncbench.measure.correctness import judge
from asyncbench.measure.environment import rows as env_rows
from asyncbench.measure.latency import format_us
from asyncbench.measure.stats import Summary
from asyncbench.measure.too_short import TOO_SHORT, too_short, too_short_note
from asyncbench.report import chart_limit, headline, verdict_table
from asyncbench.report import markdown as md
from asyncbench.report.capacity import capacity_text
from asyncbench.report.capacity import markdown_lines as capacity_section
from asyncbench.report.columns import Column, markdown
from asyncbench.report.cost_table import COST_NOTE
from asyncbench.report.cost_table import markdown_lines as cost_markdown
from asyncbench.report.durability_table import markdown_lines as durability_section
from asyncbench.report.mix import MIX_NOTE
from asyncbench.report.mix import markdown_lines as mix_markdown
from asyncbench.report.open_loop import OPEN_LOOP_NOTE, open_loop_tables
from asyncbench.report.stalls import STALL_NOTE, stall_tables
from asyncbench.result import EngineResult, PhaseResult, RunResult
from asyncbench.workload import Action, Group, PhaseKind, StreamUse, Workload
from asyncbench.workload_capabilities import verify_note
from asyncbench.workloads import workload


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], align: str = "") -> list[str]:
    """A table whose rows are already lists of cells (one column per position)."""
    align = align or "l" + "r" * (len(header) - 1)
    columns = [Column(h, a, itemgetter(i)) for i, (h, a) in enumerate(zip(header, align, strict=True))]
    return markdown(columns, rows)


def _ops_phases(e: EngineResult) -> list[PhaseResult]:
    return [p for p in e.phases if p.action is Action.OPERATIONS]


def _use_phase(e: EngineResult, kind: PhaseKind, use: StreamUse) -> PhaseResult | None:
    """The engine's first phase of ``kind`` in ``use`` (by position when the kind has
    several stream-less uses, e.g. the pre-read and post-update stabilization)."""
    return next(
        (p for p in e.phases if p.kind is kind and (len(kind.uses) == 1 or p.post_update == use.post_update)),
        None,
    )


def _stabilize_for(e: EngineResult, write: PhaseKind) -> PhaseResult | None:
    """The stabilization a write phase is ready after: pre-read after the insert,
    post-update after an update."""
    post = not write.inserts
    return next((p for p in e.phases if p.action is Action.STABILIZE and p.post_update == post), None)


def _secs(p: PhaseResult | None) -> str:
    if p is None:  # the reference's word for a figure that does not apply or was not reached
        return "n/a"
    return "n/a" if p.skipped else fmt.ms(p.seconds)


def _cell(show: Callable[[PhaseResult | None], str], kind: PhaseKind, use: StreamUse) -> Callable[[EngineResult], str]:
    """The cell of one use of a phase kind: ``show`` of the engine's phase there."""
    return lambda e: show(_use_phase(e, kind, use))


def _close_time(p: PhaseResult | None) -> str:
    """The close before the reopen phase, timed apart from the open."""
    return "n/a" if p is None or p.close_seconds is None else fmt.ms(p.close_seconds)


def completed_phase_seconds(e: EngineResult) -> float:
    return sum(p.seconds for p in _ops_phases(e))


def _maintenance_columns(wl: Workload) -> list[Column[EngineResult]]:
    """One column per use of every maintenance and verify kind of ``wl``'s phase table (a
    reopen's close, timed apart, just before it)."""
    out: list[Column[EngineResult]] = []
    for kind in wl.phases.values():
        for use, label in zip(kind.uses, kind.columns, strict=False):
            if kind.action is Action.REOPEN:
                out.append(Column("Close", "r", _cell(_close_time, kind, use)))
            out.append(Column(label, "r", _cell(_secs, kind, use)))
    return out


def _checksum_cell(e: EngineResult) -> str:
    return f"`{e.final_checksum}`" if e.final_checksum else "n/a"


@functools.cache
def _total_by_engine_columns(workload_name: str) -> list[Column[EngineResult]]:
    """The "Total By Engine" table of a result of workload ``workload_name`` (its
    maintenance kinds give columns), built once per workload."""
    return [
        Column("Engine", "l", lambda e: md.text(e.engine)),
        Column("Status", "l", lambda e: "Completed" if e.ok else md.text(e.status_text())),
        Column("Run time", "r", lambda e: fmt.ms(e.run_seconds)),
        Column("Completed phase time", "r", lambda e: fmt.ms(completed_phase_seconds(e))),
        *_maintenance_columns(workload(workload_name)),
        Column("Storage", "r", lambda e: fmt.size(e.storage_bytes) + (" (not on disk yet)" if e.storage_off_disk else "")),
        Column("Process peak memory", "r", lambda e: fmt.size(e.peak_rss_bytes)),
        Column("Final checksum", "l", _checksum_cell),
    ]


def total_by_engine(run: RunResult) -> list[str]:
    return markdown(_total_by_engine_columns(run.workload), run.engines)


def _op_of(e: EngineResult, kind: PhaseKind) -> PhaseResult | None:
    return next((p for p in e.phases if p.kind is kind), None)


def _readiness_columns(write: PhaseKind, wl: Workload) -> list[Column[EngineResult]]:
    """Four columns per write kind of ``wl``: its time, the stabilization after it, both
    together, and the throughput counting both; a workload with no stabilize kind (nothing
    to bring to rest between its phases) has its time and throughput only."""
    label = write.kind.capitalize()
    stabilize = next((k for k in wl.phases.values() if k.action is Action.STABILIZE), None)
    if stabilize is None:
        return [
            Column(label, "r", lambda e: "n/a" if (p := _op_of(e, write)) is None else fmt.ms(p.seconds)),
            Column(f"{label} throughput", "r", lambda e: "n/a" if (p := _op_of(e, write)) is None else fmt.rate(p.ops, p.seconds)),
        ]
    after = next(c for u, c in zip(stabilize.uses, stabilize.columns, strict=True) if u.post_update != write.inserts)

    def op(e: EngineResult) -> PhaseResult | None:
        return next((p for p in e.phases if p.kind is write), None)

    def ready(e: EngineResult) -> float | None:
        p, st = op(e), _stabilize_for(e, write)
        return None if p is None else p.seconds + (st.seconds if st and not st.skipped else 0.0)

    def when(cell: Callable[[EngineResult], str]) -> Callable[[EngineResult], str]:
        return lambda e: "n/a" if op(e) is None else cell(e)

    return [
        Column(label, "r", when(lambda e: fmt.ms(op(e).seconds))),  # type: ignore[union-attr]
        Column(after, "r", when(lambda e: _secs(_stabilize_for(e, write)))),
        Column(f"{label} ready", "r", when(lambda e: fmt.ms(ready(e)))),
        Column(f"{label}-ready throughput", "r", when(lambda e: fmt.rate(op(e).ops, ready(e)))),  # type: ignore[union-attr,arg-type]
    ]


@functools.cache
def _write_readiness_columns(workload_name: str) -> list[Column[EngineResult]]:
    """The "Write Readiness" table of a result of workload ``workload_name``: columns per
    write kind of its phase table, built once per workload."""
    wl = workload(workload_name)
    return [
        Column("Engine", "l", lambda e: md.text(e.engine)),
        *(c for k in wl.phases.values() if k.group is Group.WRITE for c in _readiness_columns(k, wl)),
    ]


def write_readiness(run: RunResult) -> list[str]:
    return markdown(_write_readiness_columns(run.workload), run.engines)


def _rate(groups: dict[str, EngineRuns], engine: str, p: PhaseResult) -> str:
    """Throughput of a phase: the median of the measured repeats with its spread when
    there are several (``12_345/s ± 3.1%``), flagged when unstable. A capacity search's
    phase shows its capacity (its probes' throughput mixes many rates)."""
    if p.capacity is not None:
        return f"capacity {capacity_text(p.capacity)}"
    tp = groups[engine].throughput(p.index) if engine in groups else None
    if tp is None or tp.n < 2:
        return fmt.rate(p.ops, p.seconds)
    return tp.format() + (" (unstable)" if tp.unstable() else "")


def _engine_phase_columns(groups: dict[str, EngineRuns], engine: str) -> list[Column[PhaseResult]]:
    def rate(p: PhaseResult) -> str:
        return _rate(groups, engine, p) if p.action is Action.OPERATIONS else "-"

    return [
        Column("Phase", "l", lambda p: md.text(p.name)),
        Column("Operations", "r", lambda p: fmt.count(p.ops)),
        Column("Time", "r", lambda p: fmt.ms(p.seconds) + (f" ({TOO_SHORT})" if too_short(p) else "")),
        Column("Throughput", "r", rate),
        Column("Checksum", "l", _checksum),
    ]


def _checksum(p: PhaseResult) -> str:
    """A phase's checksum; a phase stopped by its duration: of which first operations (the
    engines' differ, and are compared at their common prefix, not here)."""
    if p.capacity is not None:
        return "per probe"
    if p.prefix is not None and p.prefix.stopped:
        return f"`{p.checksum}` (first {fmt.count(p.prefix.complete)} operations)"
    return f"`{p.checksum}`"


def phase_results(run: RunResult, groups: dict[str, EngineRuns] | None = None) -> list[str]:
    groups = groups or {}
    out: list[str] = []
    indexes = sorted({p.index for e in run.engines for p in _ops_phases(e)})
    if len(run.engines) > 1 and indexes:
        out += ["### Throughput by phase", ""]

        def engine_column(e: EngineResult) -> Column[int]:
            def cell(i: int) -> str:
                p = e.phase_at(i)
                if p is None:
                    return "n/a"
                return _rate(groups, e.engine, p) + (f" ({TOO_SHORT})" if too_short(p) else "")

            return Column(md.text(e.engine), "r", cell)

        columns: list[Column[int]] = [Column("Phase", "l", lambda i: md.text(run.phases[i].name))]
        out += markdown(columns + [engine_column(e) for e in run.engines], indexes) + [""]
    for e in run.engines:
        out += [f"### {md.text(e.engine)}", ""]
        if not e.ok:
            out += [f"**{md.text(e.status_text())}**", ""]
        rows = _ops_phases(e)
        verify = next((p for p in e.phases if p.action is Action.VERIFY), None)
        if verify:
            rows.append(verify)
        out += markdown(_engine_phase_columns(groups, e.engine), rows) + [""]
    if any(too_short(p) for e in run.engines for p in _ops_phases(e)):
        out += [f"> {md.text(too_short_note())}", ""]
    return out


def configuration(run: RunResult) -> list[str]:
    c = run.counts
    rows = [["Plan file", md.code(run.source)]]
    for key in RUN_KEYS.values():  # the [run] settings the result records, labelled by their row
        if key.report is None or key.result is None:
            continue
        shown = key.shown(getattr(run, key.result))
        if shown is not None:  # the size is named by what the workload counts (YCSB: Records)
            label = run.workload_impl.unit.capitalize() if key.result == "profiles" else key.report
            rows.append([label, md.text(shown)])
    rows += [[f"Count: {k}", fmt.count(v)] for k, v in c.items() if k not in ("profiles", "limit")]
    rows.append(["Phases", " → ".join(md.text(p.name) for p in run.phases)])
    return _table(["Setting", "Value"], rows, "ll")


def environment(run: RunResult) -> list[str]:
    rows = [[md.text(k), md.text(v)] for k, v in env_rows(run.environment)]
    for e in run.engines:
        if e.initial_rss_bytes:
            rows.append([f"Initial RSS before {md.text(e.engine)}", fmt.size(e.initial_rss_bytes)])
    for e in run.engines:  # what of the peak is the process's own memory, what mapped files
        if e.peak_rss_anon_bytes is not None and e.peak_rss_file_bytes is not None:
            rows.append([
                f"Peak RSS of {md.text(e.engine)} by kind (sampled)",
                f"anonymous {fmt.size(e.peak_rss_anon_bytes)}, file-backed {fmt.size(e.peak_rss_file_bytes)}",
            ])
    for e in run.engines:
        for lib, ver in e.facts.versions.items():
            rows.append([md.text(f"{e.engine}: {lib}"), md.text(ver)])
    for e in run.engines:  # --processes/--cluster: where each client process ran, its own peak
        for k, p in enumerate(e.client_processes):
            peak = fmt.size(p.peak_rss_bytes) if p.peak_rss_bytes else "-"
            workers = ", ".join(map(str, p.workers))
            rows.append([md.text(f"{e.engine}: client process {k}"),
                         md.text(f"{p.host} (pid {p.pid}), workers {workers}, peak RSS {peak}")])
    return _table(["Item", "Value"], rows, "ll")


def engine_settings(run: RunResult) -> list[str]:
    out: list[str] = []
    for e in run.engines:
        out += [f"### {md.text(e.engine)}", ""]
        settings = e.facts.settings
        if any(st.effective is not None for st in settings):
            rows = [
                [
                    md.text(st.name),
                    md.code(st.configured),
                    md.code(st.effective) if st.effective is not None else "-",
                ]
                for st in settings
            ]
            out += _table(["Setting", "Configured", "Effective"], rows, "lll")
        elif settings:
            rows = [[md.text(st.name), md.code(st.configured)] for st in settings]
            out += _table(["Setting", "Value"], rows, "ll")
        else:
            out.append("No settings.")
        out.append("")
    return out


def durability_line(d: Durability) -> str:
    """One line from an engine's durability facts."""
    if not d.persistent:
        return "nothing persists beyond the process"
    parts = [x for x in (d.log, f"synced {d.sync}" if d.sync else "", d.write_unit) if x]
    if d.after_crash:
        parts.append(f"after a crash: {d.after_crash}")
    if d.parameters:
        parts.append(", ".join(f"{k}={v}" for k, v in d.parameters.items()))
    return "; ".join(parts) or "not stated"


def durability(run: RunResult) -> list[str]:
    return [f"- **{md.text(e.engine)}**: {md.text(durability_line(e.facts.durability))}" for e in run.engines]


def interpretation_notes(run: RunResult) -> list[str]:
    notes = [
        "Phase time covers the whole phase loop: every engine call, plan access and checksum fold, as the "
        "reference times it; the insert phase includes generating each profile.",
        f"Operations run in batches of {fmt.count(run.batch_size)}: one event-loop (and, for thread-offloaded "
        "engines, one thread) hop per batch, yet every item is its own engine operation — no multi-get, "
        "no write batch, no `IN (...)`.",
        "Reopen times the open of a new instance only, as the reference does; the close before it is "
        "timed apart (Close).",
        "Stabilization (flush and compaction) is timed separately and only for engines that ask for it; "
        "Write Readiness adds it to the write phase it follows.",
        storage_note(run) + " " + fmt.SIZE_UNIT_NOTE,
        (
            "Process peak memory is the peak RSS of the process that ran the engine: samples every 100 ms plus "
            "the kernel's high-water mark (VmHWM, reset at the engine's start), so short spikes count; "
            "it includes the Python interpreter and the harness. Each engine ran in its own child process, "
            "so no engine's memory counts for another."
            if run.isolated
            else "Process peak memory is this process's peak RSS while the engine ran: samples every 100 ms plus "
            "the kernel's high-water mark (VmHWM, reset at the engine's start); "
            "it includes the Python interpreter and the harness. Engines ran one after another in one "
            "process (no isolation), so memory an earlier engine left to the allocator may count for a later one."
        ),
        "Checksums fold what each phase returned; engines that agree returned the same results in the same "
        "order.",
    ]
    note = verify_note(run.workload_impl)
    if note is not None:  # the workload's own words on its verify phase
        notes.append(note)
    for e in run.engines:
        if e.facts.memory_scope is MemoryScope.CLIENT_ONLY:
            notes.append(
                f"{md.text(e.engine)}: process memory is the client only; the server's memory is not included."
            )
        if e.facts.harness_floor:
            notes.append(f"{md.text(e.engine)} stores nothing durably; its times are the harness-overhead floor.")
        if e.facts.cluster or any(p.retries for p in e.phases):
            notes.append(md.text(cluster_note(e)))
        for n in e.notes:
            notes.append(md.text(f"{e.engine}: {n}"))
    return [f"- {n}" for n in notes]


def cluster_note(e: EngineResult) -> str:
    """A multi-node target from the engine's cluster facts, then its retried writes per phase."""
    parts = [f"{label}: {text}" for label, text in e.facts.cluster.items()]
    retried = [f"{p.name} {fmt.count(p.retries)}" for p in e.phases if p.retries]
    parts.append("writes retried after a conflict: " + (", ".join(retried) if retried else "none"))
    return f"Cluster ({e.engine}): " + "; ".join(parts) + "."


def storage_note(run: RunResult, markdown: bool = True) -> str:
    """How and when each storage figure was obtained, from the engines' facts and the plan;
    engine names escaped for Markdown unless ``markdown`` is off (a chart's text is plain)."""
    esc = md.text if markdown else str
    settled = any(p.kind.action is Action.SETTLE for p in run.phases)
    when = (
        "after the settle phase"
        if settled
        else "after the last phase (this plan has no settle phase, so unflushed or uncompacted data "
        "may not be counted yet)"
    )
    by_method: dict[StorageMethod, list[str]] = {}
    for e in run.engines:
        by_method.setdefault(e.facts.storage_method, []).append(e.engine)
    parts = []
    if StorageMethod.FILES in by_method or not by_method:
        names = ", ".join(by_method.get(StorageMethod.FILES, []))
        who = f" ({names})" if names else ""
        who = esc(who)
        parts.append(f"Storage{who} is the size of every file under the engine's data directory, measured {when}")
    estimates = by_method.get(StorageMethod.SERVER_ESTIMATE, [])
    if estimates:
        parts.append(
            f"for {', '.join(map(esc, estimates))} it is the server's own size estimate of the engine's tables "
            f"(data and index pages it reports, measured {when}), not bytes on disk"
        )
    empty = by_method.get(StorageMethod.NONE, [])
    if empty:
        parts.append(f"{', '.join(map(esc, empty))} writes no files (0 B)")
    return "; ".join(parts) + "."


def latency_tables(run: RunResult, groups: dict[str, EngineRuns]) -> list[str]:
    """Per engine: phase x p50 / p99 / p99.9 / max per operation (µs), over every measured
    repeat's operations."""
    out: list[str] = []
    for g in groups.values():
        rows = []
        for index, spec in enumerate(run.phases):
            h = g.latency(index)
            if h is None:
                continue
            s = h.summary()
            rows.append(
                [md.text(spec.name), fmt.count(s.count)] + [format_us(v) for v in (s.p50, s.p99, s.p99_9, s.max)]
            )
        if rows:
            out += [f"### {md.text(g.engine)}", ""]
            out += _table(["Phase", "Operations", "p50 µs", "p99 µs", "p99.9 µs", "max µs"], rows) + [""]
    return out


#: Unstable phases named per engine in the Stability section (the JSON has every one).
STABILITY_WORST = 3


def stability(run: RunResult) -> list[str]:
    """Phases whose throughput spread over the repeats exceeds 10%, with advice."""
    if run.repeat - run.warmup < 2:
        return []
    found = unstable_phases(run)
    if not found:
        return [f"- Every phase's throughput spread over {run.repeat - run.warmup} measured repeats is within 10%."]
    by_engine: dict[str, list[tuple[str, Summary]]] = {}
    for e, name, summary in found:
        by_engine.setdefault(e, []).append((name, summary))
    measured = {g.engine: sum(g.throughput(i) is not None for i in range(len(run.phases))) for g in group_runs(run)}
    lines = []
    for e, rows in by_engine.items():  # one line per engine, not one per phase: the worst few named
        rows.sort(key=lambda r: -(r[1].spread_pct or 0.0))
        worst = ", ".join(f"{md.text(name)} {s.format()}" for name, s in rows[:STABILITY_WORST])
        lines.append(
            f"- **{md.text(e)}**: {len(rows)} of {measured.get(e, len(rows))} phases spread over 10 % "
            f"across the repeats; worst: {worst}"
        )
    advice = run.environment.get("noise_advice")
    lines += [f"- {a}" for a in advice if isinstance(a, str)] if isinstance(advice, list) else []
    return lines


def skipped_line(skipped: Sequence[EngineResult]) -> str:
    """The one place a skipped engine appears: ``Skipped (not available here): mysql: <why>.``"""
    seen = dict.fromkeys(md.text(f"{e.engine}: {e.detail}") for e in skipped)
    return "Skipped (not available here): " + "; ".join(seen) + "."


def title(run: RunResult) -> str:
    """The reference's report title: ``Benchmark 2M Profiles / P16 - Linux``, the size named
    by what the run's workload counts (``Benchmark 1K Records`` for YCSB: it holds no profile)."""
    system = run.environment.get("os") or "unknown OS"
    unit = run.workload_impl.unit.capitalize()
    return f"Benchmark {fmt.short_count(run.profiles)} {unit} / P{run.parallelism} - {system}"


def cost_section(run: RunResult) -> list[str]:
    """Per engine (its first measured repeat), what its phases cost beyond their time."""
    out: list[str] = []
    for g in group_runs(run):
        table = cost_markdown(g.first, md.text)
        if table:
            out += [f"### {md.text(g.engine)}", ""] + table + [""]
    return out


#: A headline line that is a verdict starts with one of these words (or names a failed engine).
_VERDICT_WORDS = ("PASS", "FAIL", "INCONCLUSIVE", "verdict:")


def _strong_verdict(line: str) -> str:
    """A headline line as Markdown, its verdict word (or a failed engine's name and FAILED)
    in bold: the words a reader decides from stand out in the report and the page."""
    head, sep, rest = line.partition(" ")
    if head in _VERDICT_WORDS:
        return f"**{md.text(head)}**{sep}{md.text(rest)}"
    if rest.startswith("FAILED "):
        return f"**{md.text(head)} FAILED**{md.text(rest.removeprefix('FAILED'))}"
    return md.text(line)


def headline_section(run: RunResult) -> list[str]:
    """The report's first paragraph: the headline's lines (:mod:`asyncbench.report.headline`)
    as bullets, and a single run's loaded-machine warning (also printed on the console)."""
    h = headline.build(run)
    out = ["**Headline**", ""] + [f"- {_strong_verdict(x)}" for x in h.lines()] + [""]
    return out + [f"> **{md.text(w)}**" for w in h.warnings] + ([""] if h.warnings else [])


def render(run: RunResult, charts: Sequence[tuple[str, str]] = (), undrawn: str | None = None) -> str:
    """The whole report; ``charts`` are (title, relative SVG path) pairs placed at the top.
    ``undrawn``: the result file's name, when the run was told to draw no charts (the report
    then says how to draw them, so their absence is not read as a failure).

    With repeats, the tables show one row per engine (:func:`aggregate.collapse`: medians
    of the measured repeats) and throughput cells carry the spread."""
    skipped = run.skipped()
    run = run.without_skipped()
    verdict = judge(run)
    groups = {g.engine: g for g in group_runs(run)}
    full, run = run, collapse(run)
    engines = ", ".join(md.text(e.engine) for e in run.engines) or "none"
    lines = [
        REPORT_MARKER,
        f"# {md.text(title(run))}",
        "",
        f"asyncbench · {md.text(run.name)} · {fmt.count(run.profiles)} {run.workload_impl.unit} · P{run.parallelism} · "
        f"started {md.text(run.started_utc)} · engines: {engines} · plan {md.code(run.source, table=False)}",
        "",
    ]
    if run.interrupted:
        lines += [f"> **Partial report: {md.text(run.interrupted)}.**", ""]
    lines += headline_section(full)
    if skipped:
        lines += [skipped_line(skipped), ""]
    capped = chart_limit.note(full)
    if charts and capped:
        lines += [f"> {md.text(capped[0].upper() + capped[1:])}.", ""]
    if undrawn is not None:
        lines += [f"Charts not drawn (--no-charts): {md.code(f'asyncbench report {undrawn}', table=False)} draws them.", ""]
    for chart_title, path in charts:
        lines += [f"![{md.text(chart_title)}]({quote(path)})", ""]  # a chart title and file may carry a phase name
    verdicts = verdict_table.markdown_lines(full, md.text)
    if verdicts:  # what the run was asked to judge, and every verdict with its reason
        lines += ["## Verdicts", ""] + verdicts + [""]
    lines += capacity_section(full, md.text)  # the scorecard first: what the run was asked
    lines += ["## Total By Engine", ""] + total_by_engine(run) + [""]
    lines += ["## Correctness", ""]
    if not run.accelerated:
        lines += [
            "- **Timed on the pure-Python fallback of the workload kernels (compiled kernels not built): "
            "checksums are exact, timings are not comparable with compiled runs.**"
        ]
    lines += [f"- **{md.text(f)}**" for f in verdict.failures]
    lines += [f"- {md.text(x)}" for x in verdict.lines] + [""]
    lines += ["## Write Readiness", ""] + write_readiness(run) + [""]
    stable = stability(full)
    if stable:
        lines += ["## Stability", ""] + stable + [""]
    lines += ["## Phase Results", ""] + phase_results(run, groups)
    latency = latency_tables(run, groups)
    if latency:
        lines += ["## Latency", "", "Per operation, measured inside the engine's own loop (µs).", ""] + latency
    stalls = stall_tables(run, groups)
    if stalls:
        lines += ["## Loop Stalls", "", STALL_NOTE, ""] + stalls
    kinds = mix_markdown(run)
    if kinds:
        lines += ["## Operation Kinds", "", MIX_NOTE, ""] + kinds + [""]
    cost = cost_section(full)  # the first measured repeat of each engine, as the CSV
    if cost:
        lines += ["## Cost", "", COST_NOTE, ""] + cost
    timed = open_loop_tables(run, groups)
    if timed:
        lines += ["## Open Loop", "", OPEN_LOOP_NOTE, ""] + timed
    lines += ["## Configuration", ""] + configuration(run) + [""]
    lines += ["## Environment", ""] + environment(run) + [""]
    lines += ["## Engine Settings", ""] + engine_settings(run)
    lines += ["## Durability Settings", ""] + durability(run) + [""]
    crashes = durability_section(full, md.text)
    if crashes:
        lines += ["## Durability After A Crash", ""] + crashes
    lines += ["## Interpretation Notes", ""] + interpretation_notes(run) + [""]
    return "\n".join(lines)
