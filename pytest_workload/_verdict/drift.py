"""The performance verdict: is a workload slower than its baseline, beyond doubt?

Evidence is weighed from the most to the least deterministic:

1. **FLOPs** (counted from shapes, identical on every machine): more than the tolerance above
   the baseline's is a regression no machine load can explain.
2. **Wall time**: a regression needs both the median ratio beyond the tolerance *and* the whole
   95% interval of the ratio beyond it (the current interval's low end against the baseline's
   high end), so noise *within* a timing makes no verdict.
3. **Thread CPU time** (CPU timings): time the timing thread actually ran, which does not grow
   while it waits for a core other processes hold. A CPU time beyond the tolerance, interval
   included, with the wall-time median beyond it too, is a regression even where the wall
   time's interval, widened by preemptions, would not say so. A wall-time regression the CPU
   time does not confirm was spent off the CPU:
   waiting for a core (the schedstat run-queue wait, ``others_load``, says how much), or
   sleeping, blocking, waiting on I/O. It is marked ``contended`` when that wait could explain
   it, and judged a regression when not.

Without CPU time (CUDA, MPS, baselines stored before it was measured) a wall-time regression
timed while ``others_load`` exceeded ``CONTENDED_LOAD`` is marked ``contended`` as long as
that load could explain it. The gate reports a contended drift instead of failing it.

Time decides only between timings of ``MIN_SAMPLES`` samples or more on both sides: with fewer,
a timing has no 95% interval, and the kind is ``too few samples`` (FLOPs still decide).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Final, Literal

from .._model.timing import Timing

#: Relative slowdown allowed before the gate fails (0.2 = 20% slower).
DEFAULT_TOLERANCE: Final = 0.2


#: Beyond this share of waiting for a core, a wall-time difference may be load, not code.
CONTENDED_LOAD: Final = 0.25


DriftKind = Literal["regression", "faster", "unchanged", "too few samples"]

#: What decided a verdict: FLOPs, thread CPU time with wall time, wall time without CPU time
#: (``off-cpu``: measured, and unchanged), or wall time alone (``wall``: none measured).
Evidence = Literal["flops", "cpu", "off-cpu", "wall"]


@dataclass(frozen=True)
class Drift:
    kind: DriftKind
    ratio: float
    ratio_low: float
    ratio_high: float
    tolerance: float
    #: Waiting for a core could explain the difference: reported, not failed.
    contended: bool = False
    evidence: Evidence = "wall"
    #: Thread CPU time ratio (median, and the low end of its 95% interval), where measured.
    cpu_ratio: float | None = None
    cpu_ratio_low: float | None = None
    #: Current FLOPs over the baseline's, where both were counted.
    flops_ratio: float | None = None


def judge(
    current: Timing,
    baseline: Timing,
    tolerance: float = DEFAULT_TOLERANCE,
    flops: tuple[int | None, int | None] = (None, None),
    threads: int = 1,
) -> Drift:
    """Compare a timing with its baseline; ``ratio`` > 1 means slower. ``flops`` is the
    (current, baseline) FLOP count where known; ``threads`` the intra-op threads it ran with."""
    if baseline.median_s <= 0 or baseline.ci_high_s <= 0:
        return Drift("unchanged", math.nan, math.nan, math.nan, tolerance)
    ratio = current.median_s / baseline.median_s
    low = current.ci_low_s / baseline.ci_high_s
    high = current.ci_high_s / baseline.ci_low_s if baseline.ci_low_s > 0 else float("inf")
    cpu_ratio, cpu_low = _cpu_ratio(current, baseline)
    flops_ratio = flops[0] / flops[1] if flops[0] and flops[1] else None
    wall = Drift(
        "unchanged", ratio, low, high, tolerance, False, "wall", cpu_ratio, cpu_low, flops_ratio
    )
    if flops_ratio is not None and flops_ratio > 1 + tolerance:
        return replace(wall, kind="regression", evidence="flops")
    if not (current.has_interval and baseline.has_interval):
        return replace(wall, kind="too few samples")
    limit = 1 + tolerance
    pool = _pool_contended(current, threads)
    if cpu_ratio is not None and cpu_low is not None and cpu_low > limit and ratio > limit:
        # the thread ran longer: its CPU time, not the wall time's wider interval, decides
        return replace(wall, kind="regression", evidence="cpu", contended=pool)
    if ratio > limit and low > limit:
        slower = _slower(wall, _load(current))
        return replace(slower, contended=True) if pool else slower
    if ratio < 1 / (1 + tolerance) and high < 1 / (1 + tolerance):
        # a faster current timing can only be explained by load on the baseline's side
        contended = _load(baseline) > CONTENDED_LOAD and 1 / high <= explainable_slowdown(
            _load(baseline), tolerance
        )
        return replace(wall, kind="faster", contended=contended)
    return wall


def worth_retiming(drift: Drift) -> bool:
    """Whether a timing looks slower than the tolerance by its median, wall or thread CPU
    time, whatever the load: timed again, it is judged on more samples, so a burst of load is
    outvoted and a real regression is proven where one timing's interval was too wide (under
    load this caught a +30% 34 times in 40 against 22, with no false alarm: docs/benchmarks.md)."""
    if drift.kind == "too few samples":  # (a replay takes enough: the baseline has too few)
        return False
    limit = 1 + drift.tolerance
    return drift.ratio > limit or (drift.cpu_ratio is not None and drift.cpu_ratio > limit)


def _pool_contended(t: Timing, threads: int) -> bool:
    """Several intra-op threads on cores other processes want: a wait on one stalls the rest
    at every barrier while the calling thread spins, so neither the wall time nor the calling
    thread's CPU time bounds what the load explains (measured: 5x to 25x on unchanged code)."""
    return threads > 1 and _load(t) > CONTENDED_LOAD


def _slower(drift: Drift, load: float) -> Drift:
    """A wall-time regression the CPU time does not confirm, weighed with the run-queue wait."""
    explained = load > CONTENDED_LOAD and drift.ratio_low <= explainable_slowdown(
        load, drift.tolerance
    )
    evidence: Evidence = "wall" if drift.cpu_ratio_low is None else "off-cpu"
    return replace(drift, kind="regression", evidence=evidence, contended=explained)


def _cpu_ratio(current: Timing, baseline: Timing) -> tuple[float | None, float | None]:
    cur, base = current, baseline
    if cur.cpu_median_s is None or base.cpu_median_s is None or base.cpu_median_s <= 0:
        return None, None
    if cur.cpu_ci_low_s is None or not base.cpu_ci_high_s:
        return cur.cpu_median_s / base.cpu_median_s, None
    return cur.cpu_median_s / base.cpu_median_s, cur.cpu_ci_low_s / base.cpu_ci_high_s


def explainable_slowdown(load: float, tolerance: float) -> float:
    """The largest slowdown (beyond the tolerance) that waiting ``load`` of the runnable
    time for a core could cause: a workload given ``1 - load`` of the CPU it asks for runs
    ``1 / (1 - load)`` times slower at worst."""
    return (1 + tolerance) / (1 - min(load, 0.999))


def _load(t: Timing) -> float:
    return t.others_load or 0.0
