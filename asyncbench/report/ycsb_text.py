"""A result as YCSB's text summary (``report --format ycsb``, ``run --format ycsb``).

YCSB users' scripts parse the lines YCSB's ``TextMeasurementsExporter`` prints
(``[OVERALL], RunTime(ms), 10110``, ``[READ], 95thPercentileLatency(us), 1866``), one
``[NAME], measurement, value`` per line. asyncbench writes the same lines from a result,
one block per engine and phase (each phase is what one ``ycsb load`` or ``ycsb run``
measures), headed by a ``#`` line that names them, which such scripts skip: ``[OVERALL]``
(the phase's run time and throughput), then per operation kind, in YCSB's order, its
``Operations``, ``AverageLatency(us)``, ``MinLatency(us)``, ``MaxLatency(us)``,
``95thPercentileLatency(us)``, ``99thPercentileLatency(us)`` (YCSB's default
``hdrhistogram.percentiles``) and ``Return=OK``. The figures come from the result's HDR
histograms (service time, ns) in YCSB's unit, integer microseconds (the mean with
decimals). A mixed phase's kinds are counted as YCSB counts them (a read-modify-write
under READ and UPDATE too); each kind's latency is its own operations'. A failed
operation fails an asyncbench run, so every count is ``Return=OK``.
"""

from __future__ import annotations

from asyncbench.measure.latency import LatencyHistogram
from asyncbench.result import LatencyStats, PhaseResult, RunResult

__all__ = ["PERCENTILES", "ycsb_lines", "ycsb_name"]

#: YCSB's default ``hdrhistogram.percentiles``
PERCENTILES = (95, 99)
#: YCSB's measurement names for operation kinds and phase kinds that differ from upper case
_NAMES = {"readmodifywrite": "READ-MODIFY-WRITE", "load": "INSERT"}
#: YCSB's order of its operations (others follow in the result's order)
_ORDER = ("READ", "UPDATE", "INSERT", "SCAN", "READ-MODIFY-WRITE")


def ycsb_name(kind: str) -> str:
    """YCSB's measurement name of an operation or phase kind: ``READ``, ``READ-MODIFY-WRITE``."""
    return _NAMES.get(kind, kind.upper())


def _ordinal(p: int) -> str:
    """YCSB's ``ordinal``: 95 -> "95th", 1 -> "1st"."""
    suffix = "th" if p % 100 in (11, 12, 13) else {1: "st", 2: "nd", 3: "rd"}.get(p % 10, "th")
    return f"{p}{suffix}"


def _us(ns: float) -> int:
    return round(ns / 1000)


def _kind_lines(name: str, ops: int, latency: LatencyStats | None) -> list[str]:
    lines = [f"[{name}], Operations, {ops}"]
    if latency is not None and latency.count:
        hist = LatencyHistogram.from_encoded(latency.histogram)
        lines += [
            f"[{name}], AverageLatency(us), {latency.mean / 1000:.3f}",
            f"[{name}], MinLatency(us), {_us(latency.min)}",
            f"[{name}], MaxLatency(us), {_us(latency.max)}",
        ]
        values = hist.values_at_percentiles([float(p) for p in PERCENTILES])
        lines += [f"[{name}], {_ordinal(p)}PercentileLatency(us), {_us(v)}" for p, v in zip(PERCENTILES, values, strict=True)]
    lines.append(f"[{name}], Return=OK, {ops}")
    return lines


def _kinds(p: PhaseResult) -> list[tuple[str, int, LatencyStats | None]]:
    """(YCSB name, operations, latency) per kind of the phase, in YCSB's order."""
    if p.mix is None:
        return [(ycsb_name(p.kind.kind), p.ops, p.latency)]
    kinds = [(ycsb_name(k), f.ops, f.latency) for k, f in p.mix.kinds.items()]
    rank = {name: i for i, name in enumerate(_ORDER)}
    return sorted(kinds, key=lambda k: rank.get(k[0], len(rank)))


def ycsb_lines(run: RunResult) -> list[str]:
    """YCSB's text summary of every engine's every phase that ran operations (warm-up
    repeats left out); [] when none did."""
    out: list[str] = []
    for e in run.engines:
        if e.warmup:
            continue
        repeat = f", repeat {e.repeat + 1}" if run.repeat > 1 else ""
        for p in e.phases:
            if p.skipped or p.ops == 0 or p.latency is None:
                continue
            out.append(
                f"# asyncbench {run.name}: engine {e.engine}, phase {p.name!r}{repeat} "
                f"({run.profiles:_d} {'records' if run.workload == 'ycsb' else 'profiles'}, parallelism {run.parallelism})"
            )
            out.append(f"[OVERALL], RunTime(ms), {round(p.seconds * 1000)}")
            out.append(f"[OVERALL], Throughput(ops/sec), {p.ops_per_s:.3f}")
            for name, ops, latency in _kinds(p):
                out += _kind_lines(name, ops, latency)
    return out
