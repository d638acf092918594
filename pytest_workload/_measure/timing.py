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
import functools
import math
import os
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol

from .._model.timing import Timing

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
    fewer than 6 samples the interval is the whole range.
    """
    n = len(ordered)
    if n < 6:
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
) -> Timing:
    """Median, IQR and the median's 95% interval of per-call times (seconds)."""
    if not samples_s:
        raise ValueError("no samples to summarize")
    ordered = sorted(samples_s)
    low, high = median_interval(ordered)
    return Timing(
        median_s=_quantile(ordered, 0.5),
        iqr_s=_quantile(ordered, 0.75) - _quantile(ordered, 0.25),
        n=len(ordered),
        ci_low_s=low,
        ci_high_s=high,
        device=device,
        source=source,
        others_load=others_load,
    )


def machine_busy_seconds() -> float | None:
    """CPU seconds the whole machine has been busy since boot (Linux ``/proc/stat``)."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu" or len(fields) < 8:
        return None
    ticks = [int(v) for v in fields[1:9]]  # user nice system idle iowait irq softirq steal
    busy = sum(ticks) - ticks[3] - ticks[4]
    return busy / os.sysconf("SC_CLK_TCK")


class LoadProbe:
    """How much of the machine other processes used during a block: ``others`` in 0..1.

    A timing taken while other processes compete for the cores measures them as much as the
    workload, however robust its statistics; the drift gate uses this to say so instead of
    failing. ``others`` stays None where it cannot be known (no ``/proc/stat``, or a block
    too short for its 10 ms ticks).
    """

    def __init__(
        self,
        busy: Callable[[], float | None] = machine_busy_seconds,
        own_cpu: Callable[[], float] = time.process_time,
        wall: Callable[[], float] = time.perf_counter,
        cpus: int | None = None,
    ) -> None:
        self._busy, self._own, self._wall = busy, own_cpu, wall
        self._cpus = cpus or os.cpu_count() or 1
        self.others: float | None = None

    def __enter__(self) -> LoadProbe:
        self._start = (self._busy(), self._own(), self._wall())
        return self

    def __exit__(self, *_: object) -> None:
        busy, own, wall = self._busy(), self._own(), self._wall()
        start_busy, start_own, start_wall = self._start
        elapsed = wall - start_wall
        if busy is None or start_busy is None or elapsed < 0.1:
            return
        others = (busy - start_busy) - (own - start_own)
        self.others = min(1.0, max(0.0, others / (elapsed * self._cpus)))


def time_call(
    fn: Callable[[], object], stopwatch: Stopwatch, policy: TimingPolicy, device: str
) -> Timing:
    """Measure ``fn`` and summarise it, with the load other processes put on the machine."""
    with LoadProbe() as probe:
        samples = measure(fn, stopwatch, policy)
    return summarize(samples, device, others_load=probe.others)


@dataclass(frozen=True)
class TimingPolicy:
    """When to stop repeating. The default keeps a suite of dozens of workloads quick."""

    budget_s: float = 0.25
    precision: float = 0.02
    min_samples: int = 5
    max_samples: int = 1000
    min_block_s: float = 1e-4


class Stopwatch(Protocol):
    """Times ``number`` back-to-back calls of ``fn`` on one device, in seconds."""

    def __call__(self, fn: Callable[[], object], number: int) -> float: ...


class CpuStopwatch:
    """``perf_counter_ns`` around the calls; right for the CPU, where calls are synchronous."""

    def __init__(self, clock: Callable[[], int] = time.perf_counter_ns) -> None:
        self._clock = clock

    def __call__(self, fn: Callable[[], object], number: int) -> float:
        start = self._clock()
        for _ in range(number):
            fn()
        return (self._clock() - start) / 1e9


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


def measure(
    fn: Callable[[], object],
    stopwatch: Stopwatch,
    policy: TimingPolicy,
    clock: Callable[[], int] = time.perf_counter_ns,
) -> list[float]:
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
    while len(samples) < policy.max_samples:
        samples.append(stopwatch(fn, number) / number)
        if len(samples) < policy.min_samples:
            continue
        if spent() >= policy.budget_s:
            break
        # A precise-looking median from a few milliseconds says more about that moment than
        # about the workload: spend a fifth of the budget at least.
        if spent() >= policy.budget_s / 5 and _precise(samples, policy.precision):
            break
    return samples


def _precise(samples: Sequence[float], precision: float) -> bool:
    ordered = sorted(samples)
    low, high = median_interval(ordered)
    median = _quantile(ordered, 0.5)
    return median > 0 and (high - low) / 2 / median <= precision
