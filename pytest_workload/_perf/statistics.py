"""Order-based statistics of timing samples: the median, the IQR and a distribution-free 95%
interval for the median, so that a few outliers from a noisy CI machine move nothing."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final

from .._workload.timing import MIN_SAMPLES, Timing

#: z for a two-sided 95% interval.
_Z95: Final = 1.959963984540054


def quantile(ordered: Sequence[float], q: float) -> float:
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def median_interval(ordered: Sequence[float]) -> tuple[float, float]:
    """95% interval of the median from order statistics, ranks ``n/2 -/+ z*sqrt(n)/2`` (the
    binomial's normal approximation); with fewer than ``MIN_SAMPLES``, the whole range."""
    n = len(ordered)
    if n < MIN_SAMPLES:
        return ordered[0], ordered[-1]
    half_width = _Z95 * math.sqrt(n) / 2
    low = max(0, math.floor(n / 2 - half_width) - 1)
    high = min(n - 1, math.ceil(n / 2 + half_width))
    return ordered[low], ordered[high]


def median_and_interval(samples: Sequence[float]) -> tuple[float, tuple[float, float]]:
    ordered = sorted(samples)
    return quantile(ordered, 0.5), median_interval(ordered)


def summarize(
    samples_s: Sequence[float],
    device: str,
    source: str = "replay",
    *,
    ratios: Sequence[float] | None = None,
    waits_s: Sequence[float] | None = None,
    calibration_s: Sequence[float] | None = None,
) -> Timing:
    """Median, IQR and the median's 95% interval of per-call times (seconds), and the median
    and interval of the compute ratios and of the waits, where taken."""
    if not samples_s:
        raise ValueError("no samples to summarize")
    ordered = sorted(samples_s)
    low, high = median_interval(ordered)
    ratio, ratio_ci = median_and_interval(ratios) if ratios else (None, None)
    wait, wait_ci = median_and_interval(waits_s) if waits_s else (None, None)
    return Timing(
        median_s=quantile(ordered, 0.5),
        iqr_s=quantile(ordered, 0.75) - quantile(ordered, 0.25),
        n=len(ordered),
        ci_s=(low, high),
        device=device,
        source=source,
        ratio=ratio,
        ratio_ci=ratio_ci,
        wait_s=wait,
        wait_ci=wait_ci,
        calibration_s=quantile(sorted(calibration_s), 0.5) if calibration_s else None,
    )
