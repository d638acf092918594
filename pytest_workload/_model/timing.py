"""A timing as data: median, spread and a 95% interval of per-call times."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .canonical import Json
from .errors import WorkloadDataError
from .fields import read_field, read_object


@dataclass(frozen=True)
class Timing:
    """Per-call time of a workload: median, spread and a 95% confidence interval."""

    median_s: float
    iqr_s: float
    n: int
    ci_low_s: float
    ci_high_s: float
    device: str
    source: str = "replay"
    #: Share of the machine's CPU other processes used while this was measured (None: unknown).
    others_load: float | None = None

    def to_dict(self) -> dict[str, Json]:
        return {
            "median_s": self.median_s,
            "iqr_s": self.iqr_s,
            "n": self.n,
            "ci95_s": [self.ci_low_s, self.ci_high_s],
            "device": self.device,
            "source": self.source,
            "others_load": self.others_load,
        }

    @classmethod
    def from_dict(cls, data: object) -> Timing:
        d = read_object(data, "timing")
        ci = read_field(d, "ci95_s", list)
        if len(ci) != 2 or not all(isinstance(v, (int, float)) for v in ci):
            raise WorkloadDataError("ci95_s must be [low, high]")
        median = float(read_field(d, "median_s", float, int))
        if not 0 < ci[0] <= median <= ci[1]:
            raise WorkloadDataError("timing needs 0 < ci95_s[0] <= median_s <= ci95_s[1]")
        load = read_field(d, "others_load", float, int, optional=True)
        if not all(math.isfinite(v) for v in (*ci, median)):
            raise WorkloadDataError("timing values must be finite")
        iqr = float(read_field(d, "iqr_s", float, int))
        if not 0 <= iqr < math.inf:
            raise WorkloadDataError(f"iqr_s must be a finite number >= 0, got {iqr}")
        n = read_field(d, "n", int)
        if n < 1:
            raise WorkloadDataError(f"n must be at least 1, got {n}")
        if load is not None and not 0 <= load <= 1:
            raise WorkloadDataError(f"others_load must be between 0 and 1, got {load}")
        return cls(
            median_s=median,
            iqr_s=iqr,
            n=n,
            ci_low_s=float(ci[0]),
            ci_high_s=float(ci[1]),
            device=read_field(d, "device", str),
            source=read_field(d, "source", str),
            others_load=None if load is None else float(load),
        )
