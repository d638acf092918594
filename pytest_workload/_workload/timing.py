"""A timing as data: median, spread and a 95% interval of per-call times, and the workload's
time relative to the calibration kernel timed beside it."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from .._core.canonical import Json
from .._core.errors import WorkloadDataError
from .._core.fields import read_field, read_object

#: Samples (for a replay: workload/calibration pairs) a timing needs to be judged against
#: another: the fewest whose range is a 95% confidence interval of the median whatever the
#: distribution (all n samples fall on one side of the median with probability 2 * 0.5**n:
#: 6.3% for 5, 3.1% for 6). With fewer, a timing is one moment of the machine, and neither
#: fails a test nor becomes a baseline.
MIN_SAMPLES: Final = 6


@dataclass(frozen=True)
class Timing:
    """Per-call time of one workload, as ``Workload.timing`` holds it.

    Example:
        ``median_s=0.00324, ci_low_s=0.00316, ci_high_s=0.00332, n=66`` reads "3.24 ms a call,
        and the true median lies between 3.16 and 3.32 ms with 95% confidence".

    Wall-clock times are what a user reads. The drift gate judges ``ratio`` instead: the
    median over interleaved pairs of (workload block / calibration kernel block), each per
    call, on the ratio clock (this thread's CPU time on the CPU, device time elsewhere): a
    machine that is slower for the workload and the kernel alike does not fail the gate.

    Attributes:
        median_s: Median seconds per call.
        iqr_s: Interquartile range of the per-call times, in seconds.
        n: Samples taken (for a replay: workload/calibration pairs).
        ci_low_s: Low end of the median's 95% confidence interval, in seconds.
        ci_high_s: High end of it.
        device: The device it ran on (``cpu``, ``cuda:0``).
        source: ``replay`` when the plugin replayed the call after the test, ``recorded
            calls`` when the times come from the test's own calls (submodules, and top-level
            workloads that were not replayed).
        ratio: The calibrated ratio the gate judges; None without a calibration (times from
            the test's own calls).
        ratio_ci: Its 95% interval, ``(low, high)``; None with ``ratio``.
        calibration_s: The calibration kernel's median per call on the ratio clock: how fast
            the machine ran.
        retimed: How many fresh re-timings a suspected regression got before this one was
            kept.
    """

    median_s: float
    iqr_s: float
    n: int
    ci_low_s: float
    ci_high_s: float
    device: str
    source: str = "replay"
    ratio: float | None = None
    ratio_ci: tuple[float, float] | None = None
    calibration_s: float | None = None
    retimed: int = 0

    @property
    def has_interval(self) -> bool:
        """Whether ``n`` allows a 95% interval of the median (``MIN_SAMPLES``, 6, at least),
        and so a verdict."""
        return self.n >= MIN_SAMPLES

    def to_dict(self) -> dict[str, Json]:
        """The timing as the JSON report holds it."""
        return {
            "median_s": self.median_s,
            "iqr_s": self.iqr_s,
            "n": self.n,
            "ci95_s": [self.ci_low_s, self.ci_high_s],
            "device": self.device,
            "source": self.source,
            "ratio": self.ratio,
            "ratio_ci95": None if self.ratio_ci is None else list(self.ratio_ci),
            "calibration_s": self.calibration_s,
            "retimed": self.retimed,
        }

    @classmethod
    def from_dict(cls, data: object) -> Timing:
        """The timing from parsed JSON; malformed data raises ``WorkloadError``."""
        d = read_object(data, "timing")
        ci = _interval(d, "ci95_s")
        assert ci is not None  # (required: read_field raised otherwise)
        low, high = ci
        median = float(read_field(d, "median_s", float, int))
        _check_interval("ci95_s", "median_s", low, median, high)
        iqr = float(read_field(d, "iqr_s", float, int))
        if not 0 <= iqr < math.inf:
            raise WorkloadDataError(f"iqr_s must be a finite number >= 0, got {iqr}")
        n = read_field(d, "n", int)
        if n < 1:
            raise WorkloadDataError(f"n must be at least 1, got {n}")
        ratio = _optional_float(d, "ratio")
        ratio_ci = _interval(d, "ratio_ci95", optional=True)
        if (ratio is None) != (ratio_ci is None):
            raise WorkloadDataError("timing needs both ratio and ratio_ci95, or neither")
        if ratio is not None and ratio_ci is not None:
            _check_interval("ratio_ci95", "ratio", ratio_ci[0], ratio, ratio_ci[1])
        calibration = _optional_float(d, "calibration_s")
        if calibration is not None and not 0 < calibration < math.inf:
            raise WorkloadDataError(f"calibration_s must be a finite number > 0, got {calibration}")
        return cls(
            median_s=median,
            iqr_s=iqr,
            n=n,
            ci_low_s=low,
            ci_high_s=high,
            device=read_field(d, "device", str),
            source=read_field(d, "source", str),
            ratio=ratio,
            ratio_ci=ratio_ci,
            calibration_s=calibration,
            retimed=read_field(d, "retimed", int, optional=True) or 0,
        )


def _check_interval(name: str, of: str, low: float, median: float, high: float) -> None:
    if not all(math.isfinite(v) for v in (low, high, median)):
        raise WorkloadDataError(f"{name} and {of} must be finite")
    if not 0 < low <= median <= high:
        raise WorkloadDataError(f"timing needs 0 < {name}[0] <= {of} <= {name}[1]")


def _optional_float(d: Mapping[str, Any], name: str) -> float | None:
    value = read_field(d, name, float, int, optional=True)
    return None if value is None else float(value)


def _interval(
    d: Mapping[str, Any], name: str, optional: bool = False
) -> tuple[float, float] | None:
    ci = read_field(d, name, list, optional=optional)
    if ci is None:
        return None
    if len(ci) != 2 or not all(isinstance(v, (int, float)) for v in ci):
        raise WorkloadDataError(f"{name} must be [low, high]")
    return float(ci[0]), float(ci[1])
