"""The performance verdict: is a workload slower than its baseline, beyond doubt?

A regression needs both: the median ratio beyond the tolerance, *and* the whole 95% interval
of the ratio beyond it (the current interval's low end against the baseline's high end).
Noise *within* a timing widens its interval and so makes no verdict. A change of machine load
*between* the baseline and the current timing does move the median, though (see
docs/benchmarks.md): a difference timed while other processes took more than
``CONTENDED_LOAD`` of the machine is marked ``contended`` as long as that load could explain
it, and the gate reports it instead of failing. A slowdown larger than the load can explain
is judged like any other.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final, Literal

from .._model.timing import Timing

#: Relative slowdown allowed before the gate fails (0.2 = 20% slower).
DEFAULT_TOLERANCE: Final = 0.2


#: Beyond this share of the machine's CPU taken by other processes, a timing is not judged.
CONTENDED_LOAD: Final = 0.25


DriftKind = Literal["regression", "faster", "unchanged"]


@dataclass(frozen=True)
class Drift:
    kind: DriftKind
    ratio: float
    ratio_low: float
    ratio_high: float
    tolerance: float
    #: Other processes took more than ``CONTENDED_LOAD`` of the machine during either timing.
    contended: bool = False


def judge(current: Timing, baseline: Timing, tolerance: float = DEFAULT_TOLERANCE) -> Drift:
    """Compare per-call medians; ``ratio`` > 1 means slower than the baseline.

    A difference measured while other processes took more than ``CONTENDED_LOAD`` of the
    machine (during the slower of the two timings), and no larger than that load could cause,
    is marked ``contended``: the gate reports it, and fails on it only when asked to be strict.
    """
    if baseline.median_s <= 0 or baseline.ci_high_s <= 0:
        return Drift("unchanged", math.nan, math.nan, math.nan, tolerance)
    ratio = current.median_s / baseline.median_s
    low = current.ci_low_s / baseline.ci_high_s
    high = current.ci_high_s / baseline.ci_low_s if baseline.ci_low_s > 0 else float("inf")
    if ratio > 1 + tolerance and low > 1 + tolerance:
        kind: DriftKind = "regression"
    elif ratio < 1 / (1 + tolerance) and high < 1 / (1 + tolerance):
        kind = "faster"
    else:
        kind = "unchanged"
    # a slower current timing can only be explained by load on the current side, a faster
    # one by load on the baseline's
    load, beyond = (_load(current), low) if ratio >= 1 else (_load(baseline), 1 / high)
    contended = (
        kind != "unchanged"
        and load > CONTENDED_LOAD
        and beyond <= explainable_slowdown(load, tolerance)
    )
    return Drift(kind, ratio, low, high, tolerance, contended)


def explainable_slowdown(load: float, tolerance: float) -> float:
    """The largest slowdown (beyond the tolerance) that other processes taking ``load`` of
    the machine could cause: a workload left ``1 - load`` of the CPU runs ``1 / (1 - load)``
    times slower at worst."""
    return (1 + tolerance) / (1 - min(load, 0.95))


def _load(t: Timing) -> float:
    return t.others_load or 0.0
