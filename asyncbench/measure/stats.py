"""Statistics over repeated runs: summaries, spread, stability, comparison, noise advice.

Choices (and why):

* **Confidence interval: Student t** on the mean, ``mean ± t(0.975, n-1) · s / √n``.
  Repeats are few (3 to 10 runs of a whole phase); a bootstrap interval from so few
  samples can never be wider than the samples' own range and under-covers badly at
  n = 3, while the t interval widens honestly as n shrinks, is deterministic without a
  seed, and needs no resampling. It assumes roughly normal noise; benchmark noise is
  skewed towards slow runs, which makes the interval wider, not falsely narrow. The t
  quantile is computed exactly for integer degrees of freedom (the closed-form Student
  CDF, Abramowitz & Stegun 26.7.3-4, inverted by bisection), so no scipy.
* **Spread, printed as ``± x%``**: half the range relative to the median,
  ``(max - min) / 2 / median``. It is what a reader can check against the raw repeats,
  it matches the min-max error bars on the charts, and unlike the CI half-width it does
  not explode at n = 2 (t = 12.7) and flag every two-run phase as unstable. The CI is
  kept in the JSON and used, through the test below, for comparisons.
* **Unstable**: spread above a threshold (default 10 %) with n > 1; a single run has no
  spread and is never called unstable (nor stable: ``spread_pct`` is ``None``).
* **Significance in comparisons: Welch's t-test** (two-sided, alpha 0.05) on the two
  sets of repeats, with the Welch-Satterthwaite degrees of freedom rounded *down* (a
  slightly conservative test that keeps the exact integer-df CDF). Welch does not assume
  equal variances (a new build is often noisier or steadier than the old one). A
  Mann-Whitney test cannot reach p < 0.05 with 3 runs per side (its smallest two-sided
  p is 0.1), so it would never call anything significant at the usual repeat counts;
  "CIs do not overlap" is a much stricter test (alpha about 0.006 for equal variances)
  than it looks. A difference counts only if it is significant *and* the ratio of the
  medians moves more than the threshold (default 5 %); with one run on either side no
  winner is called (ONE_RUN: no spread to test the change against).
* **Noise advice**: pyperf-style hints (load, frequency governor, turbo, busy
  processes) from a :class:`NoiseSnapshot`, so the rules are a pure, testable function
  of a snapshot and :func:`snapshot` is the only part that reads the live system.
"""

from __future__ import annotations

import enum
import glob
import math
import os
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil

__all__ = [
    "ALPHA",
    "CLIENT_BOUND_BUSY",
    "COMPARE_THRESHOLD",
    "UNSTABLE_THRESHOLD",
    "BusyProcess",
    "Comparison",
    "NoiseSnapshot",
    "Summary",
    "Verdict",
    "compare",
    "comparison_row",
    "exit_code",
    "busy_processes",
    "noise_advice",
    "read_governors",
    "read_turbo",
    "snapshot",
    "t_critical",
    "t_two_sided_p",
    "welch",
]

UNSTABLE_THRESHOLD = 0.10
COMPARE_THRESHOLD = 0.05
ALPHA = 0.05


# --- Student t, exact for integer degrees of freedom -------------------------------------------


def _t_central(t: float, df: int) -> float:
    """P(|T| <= t) for Student's t with integer ``df`` >= 1 (A&S 26.7.3 / 26.7.4)."""
    if df < 1:
        raise ValueError("degrees of freedom must be >= 1")
    theta = math.atan(abs(t) / math.sqrt(df))
    s, c2 = math.sin(theta), math.cos(theta) ** 2
    if df % 2:  # odd: (2/pi)(theta + sin(theta)(cos + 2/3 cos^3 + ... cos^(df-2)))
        acc = 0.0
        if df > 1:
            term = math.cos(theta)
            acc = term
            for k in range(3, df - 1, 2):
                term *= c2 * (k - 1) / k
                acc += term
        return min(1.0, 2 / math.pi * (theta + s * acc))
    term = acc = 1.0  # even: sin(theta)(1 + 1/2 cos^2 + 1*3/(2*4) cos^4 + ... cos^(df-2))
    for k in range(2, df - 1, 2):
        term *= c2 * (k - 1) / k
        acc += term
    return min(1.0, s * acc)


def t_two_sided_p(t: float, df: int) -> float:
    """Two-sided p-value of ``t`` with integer ``df``."""
    return max(0.0, 1.0 - _t_central(t, df))


def t_critical(df: int, confidence: float = 0.95) -> float:
    """The two-sided critical value: ``P(|T| <= t) = confidence`` (12.706 for df=1, 0.95)."""
    lo, hi = 0.0, 1.0
    while _t_central(hi, df) < confidence:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if _t_central(mid, df) < confidence:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12:
            break
    return (lo + hi) / 2


# --- summaries ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Summary:
    """A phase's repeats (e.g. ops/s of each run) in numbers; ``Summary.of(samples)``."""

    n: int
    median: float
    min: float
    max: float
    mean: float
    stdev: float  # sample standard deviation; 0.0 for one run
    ci_low: float | None  # 95 % Student t interval of the mean; None for one run
    ci_high: float | None
    samples: tuple[float, ...] = field(repr=False, default=())

    @classmethod
    def of(cls, samples: Sequence[float], confidence: float = 0.95) -> Summary:
        xs = [float(x) for x in samples]
        if not xs:
            raise ValueError("no samples")
        n = len(xs)
        mean = statistics.fmean(xs)
        if n == 1:
            return cls(1, xs[0], xs[0], xs[0], mean, 0.0, None, None, tuple(xs))
        sd = statistics.stdev(xs)
        half = t_critical(n - 1, confidence) * sd / math.sqrt(n)
        return cls(n, statistics.median(xs), min(xs), max(xs), mean, sd, mean - half, mean + half, tuple(xs))

    @property
    def spread_pct(self) -> float | None:
        """Half the range relative to the median, in percent (the printed ``± x%``); None for one run."""
        if self.n < 2:
            return None
        if self.median == 0:
            return 0.0 if self.max == self.min else math.inf
        return (self.max - self.min) / 2 / abs(self.median) * 100

    def unstable(self, threshold: float = UNSTABLE_THRESHOLD) -> bool:
        """True when the spread exceeds ``threshold`` (a fraction: 0.10 = 10 %)."""
        spread = self.spread_pct
        return spread is not None and spread > threshold * 100

    def format(self, unit: str = "/s") -> str:
        """``12_345/s ± 3.1%`` (one run: ``12_345/s``)."""
        text = f"{round(self.median):_d}{unit}"
        spread = self.spread_pct
        if spread is not None:
            text += f" ± {spread:.1f}%"
        return text

    def to_dict(self) -> dict[str, float | int | None | list[float]]:
        """Numbers only, for the JSON result."""
        return {
            "n": self.n,
            "median": self.median,
            "min": self.min,
            "max": self.max,
            "mean": self.mean,
            "stdev": self.stdev,
            "ci95_low": self.ci_low,
            "ci95_high": self.ci_high,
            "spread_pct": self.spread_pct,
            "samples": list(self.samples),
        }


# --- comparison --------------------------------------------------------------------------------


class Verdict(enum.Enum):
    FASTER = "faster"
    SLOWER = "slower"
    NOT_SIGNIFICANT = "not significant"
    SAME = "same"
    #: Beyond the threshold, but a side has a single run: no spread to test the change
    #: against, so no winner is called (nor a regression).
    ONE_RUN = "one run"


@dataclass(frozen=True)
class Comparison:
    verdict: Verdict
    ratio: float  # new median / base median, as measured (ops/s: > 1 is faster)
    change_pct: float  # how much faster (+) or slower (-) new is, in percent
    base: Summary
    new: Summary
    p_value: float | None  # Welch's two-sided p; None without spread
    with_spread: bool  # False when either side has a single run
    threshold: float

    def describe(self) -> str:
        """``slower by 7.2% (p = 0.003)`` / ``not called (+9.0%) (one run: without spread)``."""
        if self.verdict is Verdict.SAME:
            text = f"same (within ±{self.threshold * 100:g}%: {self.change_pct:+.1f}%)"
        elif self.verdict is Verdict.NOT_SIGNIFICANT:
            text = f"not significant ({self.change_pct:+.1f}%)"
        elif self.verdict is Verdict.ONE_RUN:
            text = f"not called ({self.change_pct:+.1f}%)"
        else:
            text = f"{self.verdict.value} by {abs(self.change_pct):.1f}%"
        if not self.with_spread:
            return text + " (one run: without spread)"
        if self.p_value is not None and self.verdict is not Verdict.SAME:
            text += f" (p = {self.p_value:.3g})"
        return text


def welch(a: Summary, b: Summary) -> tuple[float, int, float]:
    """Welch's t statistic, its degrees of freedom (rounded down) and the two-sided p-value."""
    if a.n < 2 or b.n < 2:
        raise ValueError("Welch's test needs two or more samples on each side")
    va, vb = a.stdev**2 / a.n, b.stdev**2 / b.n
    diff = b.mean - a.mean
    if va + vb == 0:
        return (math.inf if diff else 0.0), a.n + b.n - 2, (0.0 if diff else 1.0)
    t = diff / math.sqrt(va + vb)
    df = (va + vb) ** 2 / ((va**2 / (a.n - 1) if va else 0.0) + (vb**2 / (b.n - 1) if vb else 0.0))
    dfi = max(1, math.floor(df))
    return t, dfi, t_two_sided_p(t, dfi)


def compare(
    base_samples: Sequence[float],
    new_samples: Sequence[float],
    threshold: float = COMPARE_THRESHOLD,
    *,
    higher_is_better: bool = True,
    alpha: float = ALPHA,
) -> Comparison:
    """Base vs new repeats of one phase (ops/s by default; ``higher_is_better=False`` for times).

    SAME when the medians differ by at most ``threshold``; otherwise FASTER/SLOWER when
    Welch's test says so (N > 1 on both sides); NOT_SIGNIFICANT when the spread can explain
    the difference; ONE_RUN with a single run on either side: one run has no spread to
    test the change against, and the threshold alone is no evidence of a winner.
    """
    base, new = Summary.of(base_samples), Summary.of(new_samples)
    if base.median <= 0 or new.median <= 0:
        raise ValueError("medians must be positive to form a ratio")
    ratio = new.median / base.median
    speed = ratio if higher_is_better else 1 / ratio
    change = (speed - 1) * 100
    direction = Verdict.FASTER if speed > 1 else Verdict.SLOWER
    with_spread = base.n > 1 and new.n > 1
    p: float | None = None
    if with_spread:
        _, _, p = welch(base, new)
    if abs(speed - 1) <= threshold:
        verdict = Verdict.SAME
    elif not with_spread:
        verdict = Verdict.ONE_RUN
    else:
        assert p is not None
        verdict = direction if p < alpha else Verdict.NOT_SIGNIFICANT
    return Comparison(verdict, ratio, change, base, new, p, with_spread, threshold)


def comparison_row(
    engine: str, phase: str, c: Comparison, unit: str = "/s"
) -> tuple[str, str, str, str, str, str]:
    """One row of the compare table: engine, phase, base, new, ratio, verdict."""
    return (engine, phase, c.base.format(unit), c.new.format(unit), f"{c.ratio:.3f}x", c.describe())


def exit_code(comparisons: Sequence[Comparison]) -> int:
    """1 when anything is SLOWER (regressed beyond the threshold, significantly), else 0."""
    return 1 if any(c.verdict is Verdict.SLOWER for c in comparisons) else 0


# --- noise advice ------------------------------------------------------------------------------


@dataclass(frozen=True)
class BusyProcess:
    pid: int
    name: str
    cpu_percent: float  # of one CPU, over the snapshot's sampling interval


@dataclass(frozen=True)
class NoiseSnapshot:
    """What the advice looks at; built live by :func:`snapshot` or by hand in tests."""

    cpu_count: int
    load_avg: tuple[float, float, float]
    governors: dict[str, str]  # cpu name -> scaling governor; empty when there is no cpufreq
    turbo: bool | None  # True: turbo/boost enabled; None: unknown
    busy: tuple[BusyProcess, ...] = ()


BUSY_CPU_PERCENT = 10.0
#: A process busy this fraction of a phase's time (client CPU / phase time) is the bottleneck
#: (run/capacity/saturation.py's bottleneck line and the report's headline).
CLIENT_BOUND_BUSY = 0.8


def _cpu_list(names: Sequence[str]) -> str:
    if len(names) <= 4:
        return ", ".join(names)
    return f"{', '.join(names[:3])} and {len(names) - 3} more"


def noise_advice(snap: NoiseSnapshot, busy_percent: float = BUSY_CPU_PERCENT) -> list[str]:
    """pyperf-style hints on why timings may vary on this machine (empty: nothing found)."""
    advice = []
    load1 = snap.load_avg[0]
    if load1 > snap.cpu_count * 0.5:
        advice.append(
            f"Load average {load1:.2f} (1 min) on {snap.cpu_count} CPUs: other work competes with the "
            "benchmark for CPU time and caches; run it on an idle machine."
        )
    not_perf = sorted(cpu for cpu, g in snap.governors.items() if g != "performance")
    if not_perf:
        kinds = sorted({snap.governors[c] for c in not_perf})
        advice.append(
            f"CPU frequency governor is {', '.join(repr(k) for k in kinds)} on {_cpu_list(not_perf)}: the "
            "clock speed follows the load, so timings vary; use 'performance' "
            "(sudo cpupower frequency-set -g performance, or python -m pyperf system tune)."
        )
    elif not snap.governors:
        advice.append(
            "No CPU frequency scaling interface (/sys/devices/system/cpu/*/cpufreq): likely a virtual "
            "machine, whose vCPUs share the host with other guests; expect more variance than on bare metal."
        )
    if snap.turbo:
        advice.append(
            "Turbo boost is enabled: the clock speed depends on temperature and on the other cores' load; "
            "disable it for stable timings (python -m pyperf system tune)."
        )
    busy = sorted((p for p in snap.busy if p.cpu_percent >= busy_percent), key=lambda p: -p.cpu_percent)
    if busy:
        shown = ", ".join(f"{p.name} (pid {p.pid}) {p.cpu_percent:.0f}%" for p in busy[:5])
        more = f" and {len(busy) - 5} more" if len(busy) > 5 else ""
        advice.append(f"Other busy processes: {shown}{more}; stop them or benchmark elsewhere.")
    if advice:
        advice.append("More repeats (and a longer phase) narrow the confidence interval.")
    return advice


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def read_governors(root: str = "/sys/devices/system/cpu") -> dict[str, str]:
    """cpu name -> scaling governor (empty when cpufreq is absent)."""
    out = {}
    for path in sorted(glob.glob(f"{root}/cpu[0-9]*/cpufreq/scaling_governor")):
        value = _read(path)
        if value:
            out[Path(path).parent.parent.name] = value
    return out


def read_turbo(root: str = "/sys/devices/system/cpu") -> bool | None:
    no_turbo = _read(f"{root}/intel_pstate/no_turbo")
    if no_turbo is not None:
        return no_turbo == "0"
    boost = _read(f"{root}/cpufreq/boost")
    if boost is not None:
        return boost == "1"
    return None


def busy_processes(interval: float = 0.2, exclude: Sequence[int] = ()) -> tuple[BusyProcess, ...]:
    """Every process's CPU use over ``interval`` seconds (this process and ``exclude`` left out)."""
    skip = {os.getpid(), *exclude}
    procs = []
    for p in psutil.process_iter(["pid", "name"]):
        if p.info["pid"] in skip:
            continue
        try:
            p.cpu_percent(None)  # primes the counter
            procs.append(p)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    time.sleep(interval)
    out = []
    for p in procs:
        try:
            out.append(BusyProcess(p.info["pid"], p.info["name"] or "?", p.cpu_percent(None)))
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return tuple(sorted(out, key=lambda b: -b.cpu_percent))


def snapshot(interval: float = 0.2) -> NoiseSnapshot:
    """The live system, for :func:`noise_advice` (takes ``interval`` seconds)."""
    return NoiseSnapshot(
        cpu_count=os.cpu_count() or 1,
        load_avg=os.getloadavg(),
        governors=read_governors(),
        turbo=read_turbo(),
        busy=busy_processes(interval),
    )
