"""Timing: adaptive repetition on the device a workload runs on, and robust statistics.

In the spirit of ``torch.utils.benchmark``'s ``adaptive_autorange``: warm up, size blocks of
calls so each measurement is well above clock resolution, then repeat until the median is
known to a target precision or the time budget is spent. Statistics are order-based (median,
IQR and a distribution-free confidence interval for the median), so a few outliers from a noisy
CI machine move nothing.

Clocks are injected, so the loop and the statistics are tested with a fake clock.
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import math
import os
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol

from .._model.timing import MIN_SAMPLES, Timing
from .load import LoadProbe

if TYPE_CHECKING:
    import torch


#: z for a two-sided 95% interval.
_Z95: Final = 1.959963984540054


def _quantile(ordered: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile of sorted data."""
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def median_interval(ordered: Sequence[float]) -> tuple[float, float]:
    """95% confidence interval of the median from order statistics (no distribution assumed).

    The ranks ``n/2 -/+ z*sqrt(n)/2`` come from the normal approximation of the binomial; with
    fewer than ``MIN_SAMPLES`` samples the interval is the whole range (and no 95% interval).
    """
    n = len(ordered)
    if n < MIN_SAMPLES:
        return ordered[0], ordered[-1]
    half_width = _Z95 * math.sqrt(n) / 2
    low = max(0, math.floor(n / 2 - half_width) - 1)
    high = min(n - 1, math.ceil(n / 2 + half_width))
    return ordered[low], ordered[high]


def summarize(
    samples_s: Sequence[float],
    device: str,
    source: str = "replay",
    others_load: float | None = None,
    *,
    cpu_samples_s: Sequence[float] | None = None,
    cpu_pressure: float | None = None,
) -> Timing:
    """Median, IQR and the median's 95% interval of per-call times (seconds); the same
    median and interval of per-call thread CPU times where they were taken."""
    if not samples_s:
        raise ValueError("no samples to summarize")
    ordered = sorted(samples_s)
    low, high = median_interval(ordered)
    cpu = sorted(cpu_samples_s) if cpu_samples_s else None
    cpu_low, cpu_high = median_interval(cpu) if cpu else (None, None)
    return Timing(
        median_s=_quantile(ordered, 0.5),
        iqr_s=_quantile(ordered, 0.75) - _quantile(ordered, 0.25),
        n=len(ordered),
        ci_low_s=low,
        ci_high_s=high,
        device=device,
        source=source,
        others_load=others_load,
        cpu_median_s=None if cpu is None else _quantile(cpu, 0.5),
        cpu_ci_low_s=cpu_low,
        cpu_ci_high_s=cpu_high,
        cpu_pressure=cpu_pressure,
    )


def time_call(
    fn: Callable[[], object], stopwatch: Stopwatch, policy: TimingPolicy, device: str
) -> Timing:
    """Measure ``fn`` and summarise it, with what competition for the CPU cost it.

    A timing ``policy.suspected`` of a regression is timed again, afresh, up to
    ``policy.retimes`` times, and judged on the samples of every round together: a burst of
    load that hit one round is outvoted by the others, and a real regression, slow in every
    round, is judged on more samples, so with a tighter interval.
    """
    rounds = [_time_once(fn, stopwatch, policy)]
    timing = _summary(rounds, device)
    while len(rounds) <= policy.retimes and policy.suspected(timing):
        rounds.append(_time_once(fn, stopwatch, policy))
        timing = _summary(rounds, device)
    return timing


@dataclass(frozen=True)
class _Round:
    samples: Samples
    others: float | None
    pressure: float | None


def _time_once(fn: Callable[[], object], stopwatch: Stopwatch, policy: TimingPolicy) -> _Round:
    with LoadProbe() as probe:
        samples = measure(fn, stopwatch, policy)
    return _Round(samples, probe.others, probe.pressure)


def _summary(rounds: Sequence[_Round], device: str) -> Timing:
    """One timing of every round's samples; the load is the rounds' mean."""
    cpu = [r.samples.cpu_s for r in rounds]
    timing = summarize(
        [s for r in rounds for s in r.samples.wall_s],
        device,
        others_load=_mean([r.others for r in rounds]),
        cpu_samples_s=None if None in cpu else [s for c in cpu if c for s in c],
        cpu_pressure=_mean([r.pressure for r in rounds]),
    )
    return dataclasses.replace(timing, retimed=len(rounds) - 1)


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if len(known) == len(values) else None


@dataclass(frozen=True)
class TimingPolicy:
    """When to stop repeating. The default keeps a suite of dozens of workloads quick."""

    budget_s: float = 0.25
    precision: float = 0.02
    #: enough for a verdict (a replayed timing is always judged)
    min_samples: int = MIN_SAMPLES
    max_samples: int = 1000
    min_block_s: float = 1e-4
    #: Asked of each timing, with the hash of the workload timed: is this a suspected
    #: regression, to be re-timed before it is judged? (The perf gate's question.)
    suspect: Callable[[str, Timing], bool] | None = None
    #: The workload the policy is bound to (:meth:`for_workload`), for ``suspect``.
    workload: str | None = None
    #: Fresh re-timings of a suspected regression, at most.
    retimes: int = 4

    def for_workload(self, workload_hash: str) -> TimingPolicy:
        return dataclasses.replace(self, workload=workload_hash)

    def suspected(self, timing: Timing) -> bool:
        return (
            self.suspect is not None
            and self.workload is not None
            and self.suspect(self.workload, timing)
        )


class Stopwatch(Protocol):
    """Times ``number`` back-to-back calls of ``fn`` on one device, in seconds."""

    def __call__(self, fn: Callable[[], object], number: int) -> float: ...


class CpuStopwatch:
    """``perf_counter_ns`` around the calls; right for the CPU, where calls are synchronous.

    Beside the wall time it reads this thread's CPU time (``last_cpu_s``), which does not
    grow while the thread waits for a core other processes hold.
    """

    def __init__(
        self,
        clock: Callable[[], int] = time.perf_counter_ns,
        thread_clock: Callable[[], int] = time.thread_time_ns,
    ) -> None:
        self._clock, self._thread_clock = clock, thread_clock
        self.last_cpu_s: float | None = None

    def __call__(self, fn: Callable[[], object], number: int) -> float:
        start, start_cpu = self._clock(), self._thread_clock()
        for _ in range(number):
            fn()
        end, end_cpu = self._clock(), self._thread_clock()
        self.last_cpu_s = (end_cpu - start_cpu) / 1e9
        return (end - start) / 1e9


class SyncStopwatch:
    """Wall time between two device synchronisations (MPS, or any device with a sync call)."""

    def __init__(self, synchronize: Callable[[], None]) -> None:
        self._synchronize = synchronize

    def __call__(self, fn: Callable[[], object], number: int) -> float:
        self._synchronize()
        start = time.perf_counter_ns()
        for _ in range(number):
            fn()
        self._synchronize()
        return (time.perf_counter_ns() - start) / 1e9


class CudaStopwatch:
    """CUDA events recorded on the current stream around the calls, then synchronised."""

    def __init__(self, device: torch.device) -> None:
        self._device = device

    def __call__(self, fn: Callable[[], object], number: int) -> float:
        import torch

        with torch.cuda.device(self._device):
            torch.cuda.synchronize()
            start = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            start.record()
            for _ in range(number):
                fn()
            end.record()
            end.synchronize()
            return float(start.elapsed_time(end)) / 1e3


#: glibc mallopt parameters, and the values pinned so timings do not depend on test order.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


_PINNED_MMAP_BYTES, _PINNED_TRIM_BYTES = 32 * 2**20, 64 * 2**20


@functools.cache
def pin_allocator() -> str | None:
    """Fix glibc malloc's mmap and trim thresholds for this process, once; say what was done.

    glibc raises both thresholds as a process frees larger blocks, so until a big model has
    run, a small model's buffers go back to the kernel and are faulted in again on every call:
    the same workload times up to ~1.5x slower in a fresh process than after another test.
    Pinning them (at glibc's own dynamic maximum) makes timings independent of what ran
    before. Respects ``MALLOC_MMAP_THRESHOLD_`` / ``MALLOC_TRIM_THRESHOLD_`` if set; does
    nothing on other C libraries.
    """
    if platform.libc_ver()[0] != "glibc":
        return None
    if "MALLOC_MMAP_THRESHOLD_" in os.environ or "MALLOC_TRIM_THRESHOLD_" in os.environ:
        return "glibc malloc thresholds from the environment"
    try:
        libc = ctypes.CDLL(None)
        pinned = libc.mallopt(_M_MMAP_THRESHOLD, _PINNED_MMAP_BYTES) and libc.mallopt(
            _M_TRIM_THRESHOLD, _PINNED_TRIM_BYTES
        )
    except (OSError, AttributeError):
        return None
    return "glibc malloc thresholds pinned (mmap 32 MiB, trim 64 MiB)" if pinned else None


def allocator_state() -> str | None:
    """What :func:`pin_allocator` did in this process; None if no CPU timing called it."""
    return pin_allocator() if pin_allocator.cache_info().currsize else None


def stopwatch_for(device: torch.device) -> Stopwatch:
    """The right way to time calls on ``device``: never CUDA without events or a sync."""
    import torch

    if device.type == "cuda":
        return CudaStopwatch(device)
    if device.type == "mps":
        return SyncStopwatch(torch.mps.synchronize)
    return CpuStopwatch()


@dataclass(frozen=True)
class Samples:
    """Per-call times of each block (seconds): wall, and thread CPU where the stopwatch reads it."""

    wall_s: list[float]
    cpu_s: list[float] | None = None


def measure(
    fn: Callable[[], object],
    stopwatch: Stopwatch,
    policy: TimingPolicy,
    clock: Callable[[], int] = time.perf_counter_ns,
) -> Samples:
    """Per-call times (seconds) of ``fn``: warm-up, block sizing, then adaptive repetition.

    ``clock`` only meters the budget; the samples come from ``stopwatch``.
    """
    started = clock()

    def spent() -> float:
        return (clock() - started) / 1e9

    # Warm-up: at least two calls, then up to a tenth of the budget (at most 100 calls).
    per_call = min(stopwatch(fn, 1), stopwatch(fn, 1))
    for _ in range(98):
        if spent() >= policy.budget_s / 10:
            break
        per_call = min(per_call, stopwatch(fn, 1))
    number = max(1, math.ceil(policy.min_block_s / max(per_call, 1e-9)))

    samples: list[float] = []
    cpu: list[float] = []
    while len(samples) < policy.max_samples:
        samples.append(stopwatch(fn, number) / number)
        if isinstance(stopwatch, CpuStopwatch) and stopwatch.last_cpu_s is not None:
            cpu.append(stopwatch.last_cpu_s / number)
        if len(samples) < policy.min_samples:
            continue
        if spent() >= policy.budget_s:
            break
        # A precise-looking median from a few milliseconds says more about that moment than
        # about the workload: spend a fifth of the budget at least.
        if spent() >= policy.budget_s / 5 and _precise(samples, policy.precision):
            break
    return Samples(samples, cpu if len(cpu) == len(samples) else None)


def _precise(samples: Sequence[float], precision: float) -> bool:
    ordered = sorted(samples)
    low, high = median_interval(ordered)
    median = _quantile(ordered, 0.5)
    return median > 0 and (high - low) / 2 / median <= precision
