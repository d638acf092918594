"""A timing as data: median, spread and a 95% interval of per-call times."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from .canonical import Json
from .errors import WorkloadDataError
from .fields import read_field, read_object

#: Samples a timing needs to be judged against another: the fewest whose range is a 95%
#: confidence interval of the median whatever the distribution (all n samples fall on one side
#: of the median with probability 2 * 0.5**n: 6.3% for 5, 3.1% for 6). With fewer, a timing is
#: one moment of the machine, and neither fails a test nor becomes a baseline.
MIN_SAMPLES: Final = 6


@dataclass(frozen=True)
class Timing:
    """Per-call time of a workload: median, spread and a 95% confidence interval.

    Every field after ``source`` is optional (None: not measured), so timings stored by
    earlier versions, which lack them, still load.
    """

    median_s: float
    iqr_s: float
    n: int
    ci_low_s: float
    ci_high_s: float
    device: str
    source: str = "replay"
    #: Share (0..1) of the timing's wall time that the thread of this process that waited
    #: most spent runnable, waiting for a core other tasks held (schedstat). Timings stored
    #: before it was read from schedstat hold other processes' share of the machine's CPU
    #: (``/proc/stat``) here instead.
    others_load: float | None = None
    #: Per-call thread CPU time: median and its 95% interval (CPU timings only).
    cpu_median_s: float | None = None
    cpu_ci_low_s: float | None = None
    cpu_ci_high_s: float | None = None
    #: Share (0..1) of the timing's wall time during which some task waited for a CPU (PSI).
    cpu_pressure: float | None = None
    #: How many fresh re-timings a suspected regression got before this one was kept.
    retimed: int = 0

    @property
    def has_interval(self) -> bool:
        """Whether ``n`` allows a 95% interval of the median (:data:`MIN_SAMPLES` at least),
        and so a verdict."""
        return self.n >= MIN_SAMPLES

    def to_dict(self) -> dict[str, Json]:
        cpu: Json = None
        if self.cpu_ci_low_s is not None and self.cpu_ci_high_s is not None:
            cpu = [self.cpu_ci_low_s, self.cpu_ci_high_s]
        return {
            "median_s": self.median_s,
            "iqr_s": self.iqr_s,
            "n": self.n,
            "ci95_s": [self.ci_low_s, self.ci_high_s],
            "device": self.device,
            "source": self.source,
            "others_load": self.others_load,
            "cpu_median_s": self.cpu_median_s,
            "cpu_ci95_s": cpu,
            "cpu_pressure": self.cpu_pressure,
            "retimed": self.retimed,
        }

    @classmethod
    def from_dict(cls, data: object) -> Timing:
        d = read_object(data, "timing")
        low, high = _interval(d, "ci95_s")
        median = float(read_field(d, "median_s", float, int))
        if not 0 < low <= median <= high:
            raise WorkloadDataError("timing needs 0 < ci95_s[0] <= median_s <= ci95_s[1]")
        if not all(math.isfinite(v) for v in (low, high, median)):
            raise WorkloadDataError("timing values must be finite")
        iqr = float(read_field(d, "iqr_s", float, int))
        if not 0 <= iqr < math.inf:
            raise WorkloadDataError(f"iqr_s must be a finite number >= 0, got {iqr}")
        n = read_field(d, "n", int)
        if n < 1:
            raise WorkloadDataError(f"n must be at least 1, got {n}")
        cpu_low, cpu_high = _interval(d, "cpu_ci95_s", optional=True)
        return cls(
            median_s=median,
            iqr_s=iqr,
            n=n,
            ci_low_s=low,
            ci_high_s=high,
            device=read_field(d, "device", str),
            source=read_field(d, "source", str),
            others_load=_share(d, "others_load"),
            cpu_median_s=_optional_float(d, "cpu_median_s"),
            cpu_ci_low_s=cpu_low,
            cpu_ci_high_s=cpu_high,
            cpu_pressure=_share(d, "cpu_pressure"),
            retimed=read_field(d, "retimed", int, optional=True) or 0,
        )


def _optional_float(d: Mapping[str, Any], name: str) -> float | None:
    value = read_field(d, name, float, int, optional=True)
    return None if value is None else float(value)


def _share(d: Mapping[str, Any], name: str) -> float | None:
    value = _optional_float(d, name)
    if value is not None and not 0 <= value <= 1:
        raise WorkloadDataError(f"{name} must be between 0 and 1, got {value}")
    return value


def _interval(d: Mapping[str, Any], name: str, optional: bool = False) -> tuple[Any, Any]:
    ci = read_field(d, name, list, optional=optional)
    if ci is None:
        return None, None
    if len(ci) != 2 or not all(isinstance(v, (int, float)) for v in ci):
        raise WorkloadDataError(f"{name} must be [low, high]")
    return float(ci[0]), float(ci[1])
