"""A phase's result row and its figures from its batches: one place for the single-process
runner (:mod:`asyncbench.run.runner`) and the scaled-out coordinator
(:mod:`asyncbench.run.scale_out.distributed`), so both report a phase alike.

The figures come from a :class:`~asyncbench.measure.latency_recorder.PhaseRecorder` holding
every batch of the phase: in one process its own workers', in a scaled-out run the batches
the client processes shipped to the coordinator (:mod:`asyncbench.run.scale_out.batch_lines`), so
the per-second series, the latency over time and the open-loop figures are computed by the
same code from the same values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from asyncbench.config import PhaseSpec
from asyncbench.measure.latency import LatencyHistogram
from asyncbench.measure.latency_recorder import PhaseRecorder
from asyncbench.rate import Arrivals, Rate
from asyncbench.result import KindFigures, OpenLoop, PhaseMix, PhasePrefix, PhaseResult
from asyncbench.workload import MixFigures, PhaseKind, Workload
from asyncbench.workload_capabilities import mix_figures, prefix_checksums

__all__ = [
    "add_figures",
    "kind_histograms",
    "merge_kind_latencies",
    "phase_mix",
    "phase_prefix",
    "phase_rate",
    "phase_row",
    "sweep_dipped",
]


def hot_label(fraction: float) -> str:
    """0.001 -> "0.1%": a hot fraction as the result and report name it."""
    return f"{fraction * 100:g}%"


def phase_mix(figures: MixFigures | None) -> PhaseMix | None:
    """A mixed phase's per-kind figures and skew for its result (after its clock stopped):
    each kind's latencies summarised as the phase's are (an HdrHistogram)."""
    if figures is None:
        return None
    kinds = {}
    for name, ops in figures.counts.items():
        took = figures.latencies_ns.get(name)
        stats = None
        if took is not None and len(took):
            stats = LatencyHistogram.from_values(took).summary()
        kinds[name] = KindFigures(ops, stats)
    return PhaseMix(kinds, {hot_label(f): share for f, share in figures.hot_shares.items()})


def phase_prefix(
    spec: PhaseSpec,
    kind: PhaseKind,
    items: Sequence[Any],
    ran: Sequence[tuple[Sequence[Any], Sequence[Any]]],
    wl: Workload,
) -> tuple[PhasePrefix, str]:
    """A phase that ran for a duration (after its clock stopped): how far its stream ran
    whole, its checkpoints, and its checksum (the whole prefix's: what another engine that
    ran as far agrees on, whatever else it ran past it)."""
    assert spec.duration is not None
    got = prefix_checksums(wl, kind, items, ran)
    prefix = PhasePrefix(spec.duration, len(items), got.complete, got.every, list(got.checkpoints))
    return prefix, got.checksum


def kind_histograms(kind: PhaseKind, items: Sequence[Any], wl: Workload) -> dict[str, str] | None:
    """A mixed phase's latencies per operation kind measured in this process (a client
    process of a scaled-out run), as encoded HdrHistograms; None for other phases."""
    if not kind.mixes:
        return None
    figures = mix_figures(wl, kind, items)
    if figures is None:
        return None
    return {name: LatencyHistogram.from_values(took).encoded() for name, took in figures.latencies_ns.items() if len(took)}


def merge_kind_latencies(mix: PhaseMix | None, shipped: Sequence[dict[str, str] | None]) -> None:
    """Each kind's latency of a scaled-out mixed phase: the client processes' histograms
    (:func:`kind_histograms`) merged exactly, never averaged."""
    if mix is None:
        return
    for name, figures in mix.kinds.items():
        hists = [LatencyHistogram.from_encoded(h[name]) for h in shipped if h and name in h]
        merged = LatencyHistogram.merge(hists) if hists else None
        if merged is not None and merged.count:
            figures.latency = merged.summary()


def phase_rate(spec: PhaseSpec) -> Rate | None:
    """The phase's target rate, None in the closed loop."""
    return Rate(spec.rate, Arrivals(spec.arrivals)) if spec.rate is not None else None


def phase_row(
    index: int,
    spec: PhaseSpec,
    kind: PhaseKind,
    ops: int,
    seconds: float,
    checksum: str | None = None,
    skipped: bool = False,
    close_seconds: float | None = None,
) -> PhaseResult:
    """The result row of phase ``index`` (``spec``, of phase kind ``kind``) with its outcome."""
    return PhaseResult(
        index=index,
        name=spec.name,
        kind=kind,
        action=kind.action,
        group=kind.group,
        ops=ops,
        seconds=seconds,
        checksum=checksum,
        stream=spec.stream,
        count=spec.count,
        post_update=spec.post_update,
        skipped=skipped,
        close_seconds=close_seconds,
    )


def add_figures(pr: PhaseResult, recorder: PhaseRecorder, rate: Rate | None, latency: bool = True) -> None:
    """The phase's figures from its recorder, after its clock stopped: the latency summary
    (unless ``latency`` is False: the caller has it), the latency over time (slices of a
    width chosen from the phase's length), the per-second series and, under a rate, the open-loop figures."""
    if latency:
        pr.latency = recorder.summary()
    sliced, sliced_response = recorder.sliced()
    pr.latency_over_time = [list(b) for b in sliced] or None
    service, response = recorder.per_second()
    pr.time_series = [list(b) for b in service] or None
    if rate is not None:
        pr.open_loop = open_loop(rate, recorder)
        pr.open_loop.response_series = [list(b) for b in response] or None
        pr.open_loop.response_over_time = [list(b) for b in sliced_response] or None


def open_loop(rate: Rate, recorder: PhaseRecorder) -> OpenLoop:
    """The phase's open-loop figures from its recorder (after the phase's clock stopped)."""
    figures = recorder.open_loop_summary()
    if figures is None:  # a phase without operations
        return OpenLoop(rate=rate.ops_per_s, arrivals=rate.arrivals)
    return OpenLoop(
        rate=rate.ops_per_s,
        arrivals=rate.arrivals,
        response=figures["response"],
        lag_p99_ns=figures["lag_p99_ns"],
        lag_max_ns=figures["lag_max_ns"],
        delay_p99_ns=figures["delay_p99_ns"],
        delay_max_ns=figures["delay_max_ns"],
        delay_ns=figures["delay_ns"],
    )


def sweep_dipped(
    pr: PhaseResult,
    spec: PhaseSpec,
    rate: Rate | None,
    dipped: set[int],
    notes: list[str],
    later: Sequence[PhaseSpec] = (),
) -> None:
    """A sweep's level whose achieved rate fell short stops the sweep: its higher levels
    (those of ``later``, the plan's phases after this one, in the same sweep) are skipped
    (``dipped`` gains the sweep, ``notes`` says why). A dip at the sweep's last level skips
    nothing, and the note says so rather than claiming higher rates were skipped."""
    if spec.sweep is not None and pr.rate_missed:
        dipped.add(spec.sweep)
        achieved = (
            f"{round(pr.ops_per_s):_d}/s achieved of {round(rate.ops_per_s if rate else 0):_d}/s (more than 5 % below)"
        )
        higher = sum(1 for s in later if s.sweep == spec.sweep)
        if higher:
            notes.append(
                f"sweep of {spec.name!r} stopped: {achieved}; its {higher} higher "
                f"rate{'s were' if higher > 1 else ' was'} skipped"
            )
        else:
            notes.append(f"sweep of {spec.name!r}: its highest rate dipped: {achieved}; no higher rate was planned")
