"""The performance verdict: is a workload slower than its baseline, beyond doubt? The rules
and the runs behind each (calibrated time first, wall time where a side has no calibration,
too few samples, a kernel that moved too far, re-timing) are docs/explanation/timing.md's
"How the gate decides"."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Final, Literal

from .._workload.timing import Timing
from .device import device_for

#: Relative slowdown allowed before the gate fails (0.15 = 15% slower).
DEFAULT_TOLERANCE: Final = 0.15


DriftKind = Literal["regression", "faster", "unchanged", "too few samples", "not comparable"]

#: What decided a verdict: the calibrated ratio, or wall time (no calibration).
Evidence = Literal["calibrated", "wall"]


@dataclass(frozen=True)
class Drift:
    kind: DriftKind
    #: Current over baseline (calibrated where both sides are), and its 95% interval.
    ratio: float
    ratio_low: float
    ratio_high: float
    tolerance: float
    evidence: Evidence = "wall"
    #: Current wall-time median over the baseline's, what a user reads beside ``ratio``.
    wall_ratio: float = math.nan
    #: Current calibration kernel's time over the baseline's: how much slower the machine ran.
    machine_ratio: float | None = None

    def figure(self) -> str:
        """The deciding ratio, and its 95% interval where both timings have one."""
        what = "calibrated ratio" if self.evidence == "calibrated" else "wall-time ratio"
        if self.kind == "too few samples" or not math.isfinite(self.ratio_low):
            return f"{what} {self.ratio:.2f}x"
        return (
            f"{what} {self.ratio:.2f}x (95% interval {self.ratio_low:.2f}–{self.ratio_high:.2f}x)"
        )


def judge(current: Timing, baseline: Timing, tolerance: float = DEFAULT_TOLERANCE) -> Drift:
    """Compare a timing with its baseline; ``ratio`` > 1 means slower."""
    wall = current.median_s / baseline.median_s
    low, high = current.ci_s[0] / baseline.ci_s[1], current.ci_s[1] / baseline.ci_s[0]
    drift = Drift("unchanged", wall, low, high, tolerance, "wall", wall)
    # both at the machine speed of the baseline (its kernel's time)
    kernel = baseline.calibration_s
    now = None if kernel is None else current.calibrated(kernel)
    then = None if kernel is None else baseline.calibrated(kernel)
    if now is not None and then is not None and current.calibration_s is not None:
        assert kernel is not None
        (cur, cur_low, cur_high), (base, base_low, base_high) = now, then
        machine = current.calibration_s / kernel
        ratios = (cur / base, cur_low / base_high, cur_high / base_low)
        drift = Drift("unchanged", *ratios, tolerance, "calibrated", wall, machine)
    if not (current.has_interval and baseline.has_interval):
        return replace(drift, kind="too few samples")
    machine_limit = device_for(current.device).kernel_limit
    if (
        drift.machine_ratio is not None
        and machine_limit is not None
        and not 1 / machine_limit <= drift.machine_ratio <= machine_limit
    ):
        return replace(drift, kind="not comparable")
    limit = 1 + tolerance
    if drift.ratio > limit and drift.ratio_low > limit:
        return replace(drift, kind="regression")
    if drift.ratio < 1 / limit and drift.ratio_high < 1 / limit:
        return replace(drift, kind="faster")
    return drift


def worth_retiming(drift: Drift) -> bool:
    """Whether a timing's median lies beyond the tolerance, either way, proven or not: timed
    again, it is judged on more samples (faster is doubted too: see the module's docs)."""
    limit = 1 + drift.tolerance
    doubtful = drift.kind in ("regression", "unchanged", "faster")
    return doubtful and not 1 / limit <= drift.ratio <= limit
