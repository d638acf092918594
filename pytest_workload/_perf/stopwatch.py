"""Timing by adaptive repetition: blocks of the workload alternate with blocks of the
calibration kernel, summarised by order statistics (docs/explanation/timing.md, "Timing")."""

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
    ordered = sorted(samples_s)
    ratio, ratio_ci = median_and_interval(ratios) if ratios else (None, None)
    wait, wait_ci = median_and_interval(waits_s) if waits_s else (None, None)
    return Timing(
        median_s=quantile(ordered, 0.5),
        iqr_s=quantile(ordered, 0.75) - quantile(ordered, 0.25),
        n=len(ordered),
        ci_s=median_interval(ordered),
        device=device,
        source=source,
        ratio=ratio,
        ratio_ci=ratio_ci,
        wait_s=wait,
        wait_ci=wait_ci,
        calibration_s=quantile(sorted(calibration_s), 0.5) if calibration_s else None,
    )


def time_call(
    fn: Callable[[], object],
    stopwatch: Stopwatch,
    policy: TimingPolicy,
    device: str,
    reference: Callable[[], object],
) -> Timing:
    """Measure ``fn`` interleaved with the calibration kernel ``reference``, and summarise it.
    A timing ``policy.suspected`` of a regression is timed afresh, up to ``policy.retimes``
    times, and judged on every round's samples: a burst that hit one round is outvoted, and a
    real regression is judged on more samples, so with a tighter interval."""
    rounds: list[Samples] = []
    while True:
        rounds.append(measure(fn, stopwatch, policy, reference=reference))
        if not rounds[0].wall_s:
            raise Unmeasured(
                "no block of calls could be timed: the kernel counted more waiting for a core "
                "than each block spent off the CPU"
            )
        timing = summarize(
            [s for r in rounds for s in r.wall_s],
            device,
            ratios=[s for r in rounds for s in r.ratios],
            waits_s=[s for r in rounds for s in r.waits_s],
            calibration_s=[s for r in rounds for s in r.calibration_s],
        )
        timing = dataclasses.replace(timing, retimed=len(rounds) - 1)
        if len(rounds) > policy.retimes or not policy.suspected(timing):
            return timing


class Unmeasured(Exception):
    """A timing that took no sample it could keep."""


#: A timing's limit, in budgets: room for a workload of a tenth of a second to reach the
#: ``MIN_SAMPLES`` a verdict needs on a busy machine.
LIMIT_BUDGETS: Final = 10


@dataclass(frozen=True)
class TimingPolicy:
    """When to stop repeating. Each number, and the runs that chose it, is in
    docs/explanation/timing.md ("Timing") and docs/benchmarks.md (section 13)."""

    budget_s: float = 0.25
    precision: float = 0.02
    min_samples: int = MIN_SAMPLES
    #: Samples sought past the budget, for as long as ``overrun`` budgets.
    target_samples: int = 15
    #: The calibration block lasts this share of the workload's block at least.
    reference_share: float = 0.25
    overrun: float = 4.0
    #: No pair of blocks ends past this (seconds of the thread's own time after the first
    #: call), the first ``min_samples`` included.
    limit_s: float = 0.25 * LIMIT_BUDGETS
    max_samples: int = 1000
    #: Each block of calls (workload, then calibration) lasts this long at least.
    min_block_s: float = 1e-3
    #: The perf gate's question, of each timing of the workload: re-time it before judging?
    suspect: Callable[[str, Timing], bool] | None = None
    #: (for ``suspect``: the workload timed)
    workload: str | None = None
    #: Fresh re-timings of a suspected regression, at most.
    retimes: int = 4

    def suspected(self, timing: Timing) -> bool:
        return (
            self.suspect is not None
            and self.workload is not None
            and self.suspect(self.workload, timing)
        )


@dataclass(frozen=True)
class Lap:
    """One block of calls (seconds): its wall time, its compute (the thread's CPU time on the
    CPU, device time elsewhere) and its waits for anything but a core (None: not known)."""

    wall_s: float
    compute_s: float
    wait_s: float | None = 0.0

    @property
    def ratio_s(self) -> float:
        return self.compute_s + (self.wait_s or 0.0)


#: Times ``number`` back-to-back calls of ``fn`` on one device: ``stopwatch(fn, number)``.
Stopwatch = Callable[[Callable[[], object], int], Lap]


def run_delay_ns() -> int | None:
    """Nanoseconds this thread has waited for a core (Linux schedstat's ``run_delay``)."""
    try:
        with open("/proc/thread-self/schedstat", "rb") as f:
            return int(f.read().split()[1])
    except (OSError, IndexError, ValueError):
        return None


def own_time_ns() -> int:
    """A clock that stands still while this thread waits for a core (where the kernel says)."""
    return time.perf_counter_ns() - (run_delay_ns() or 0)


def cpu_lap(
    fn: Callable[[], object],
    number: int,
    clock: Callable[[], int] = time.perf_counter_ns,
    thread_clock: Callable[[], int] = time.thread_time_ns,
    run_delay: Callable[[], int | None] = run_delay_ns,
) -> Lap:
    """A :data:`Stopwatch` on the host's clocks: the thread's CPU time as a block's compute,
    and as its waits the rest of the wall time less the time it waited in a run queue
    (docs/explanation/timing.md, "Timing")."""
    # (the run-queue reads, a file each, outside the clocks: not timed as the block's own)
    start_delay = run_delay()
    start, start_cpu = clock(), thread_clock()
    for _ in range(number):
        fn()
    end, end_cpu = clock(), thread_clock()
    end_delay = run_delay()
    wall, cpu = end - start, end_cpu - start_cpu
    if start_delay is None or end_delay is None:
        return Lap(wall / 1e9, cpu / 1e9)
    wait = wall - (end_delay - start_delay) - cpu
    if wait < -(_SLACK_NS + wall * _SLACK_SHARE):
        # more waiting for a core than the block spent off the CPU: a wait from outside it
        return Lap(wall / 1e9, cpu / 1e9, None)
    return Lap(wall / 1e9, cpu / 1e9, max(0, wait) / 1e9)


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_PINNED_MMAP_BYTES, _PINNED_TRIM_BYTES = 32 * 2**20, 64 * 2**20


@functools.cache
def pin_allocator() -> str | None:
    """Fix glibc malloc's mmap and trim thresholds for this process, once, so timings do not
    depend on what ran before (docs/explanation/timing.md, "Allocation history"); say so."""
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


@dataclass(frozen=True)
class Samples:
    """Per pair of blocks, per call: the workload's wall time, its compute over the kernel's
    time, its waits, and the kernel's time."""

    wall_s: list[float]
    ratios: list[float]
    waits_s: list[float]
    calibration_s: list[float]

    def calibrated(self) -> list[float]:
        """Per pair, the workload's time in kernel calls (what the precision is sought on)."""
        kernel = max(quantile(sorted(self.calibration_s), 0.5), _RESOLUTION_S)
        return [r + w / kernel for r, w in zip(self.ratios, self.waits_s, strict=True)]


def measure(
    fn: Callable[[], object],
    stopwatch: Stopwatch,
    policy: TimingPolicy,
    clock: Callable[[], int] = time.perf_counter_ns,
    *,
    reference: Callable[[], object],
    own_clock: Callable[[], int] = own_time_ns,
) -> Samples:
    """Blocks of ``fn`` alternating with blocks of ``reference``: warm-up, block sizing on the
    ratio clock, then repetition until the ratio's median is precise. A workload too slow for
    ``min_samples`` within ``policy.limit_s`` on ``own_clock`` (which leaves out the time
    neighbours held the cores) is cut short, on one sample at least. ``clock`` meters the
    budget."""
    started = clock()

    def spent() -> float:
        return (clock() - started) / 1e9

    def own(since: int) -> float:
        return (own_clock() - since) / 1e9

    # Warm-up (docs/explanation/timing.md, "Timing", step 1): the first call, a cold start, is
    # not counted against the limit.
    per_call, per_reference = math.inf, math.inf
    warm = own_clock()
    for i in range(100):
        if i == 1:
            cold_s, warm = own(warm), own_clock()
            if cold_s > policy.limit_s / 2:
                break
        elif i >= 2 and spent() > policy.budget_s / 10:
            break
        per_call = min(per_call, stopwatch(fn, 1).ratio_s)
        per_reference = min(per_reference, stopwatch(reference, 1).ratio_s)
    number = _block(policy.min_block_s, per_call)
    reference_number = _block(
        max(policy.min_block_s, number * per_call * policy.reference_share), per_reference
    )

    samples = Samples([], [], [], [])
    for laps in range(1, policy.max_samples + 1):
        before = own_clock()
        lap = stopwatch(fn, number)
        reference()
        kernel_s = stopwatch(reference, reference_number).ratio_s
        calibration = kernel_s / reference_number
        if lap.wait_s is not None:  # (a block whose waits are unknown gives no sample)
            samples.wall_s.append(lap.wall_s / number)
            samples.ratios.append(lap.compute_s / number / max(calibration, _RESOLUTION_S))
            samples.waits_s.append(lap.wait_s / number)
            samples.calibration_s.append(calibration)
        # (past the limit, a timing still takes its first sample: a block whose waits were
        # unknown gives none, and up to 3 such blocks are tried)
        if own(warm) + own(before) > policy.limit_s and (samples.wall_s or laps >= 3):
            break
        now = spent()
        if len(samples.wall_s) < policy.min_samples:
            continue
        if now >= policy.budget_s and (
            len(samples.wall_s) >= policy.target_samples or now >= policy.budget_s * policy.overrun
        ):
            break
        # A precise-looking median from a few milliseconds says more about that moment than
        # about the workload: spend a fifth of the budget at least.
        if spent() >= policy.budget_s / 5:
            median, (low, high) = median_and_interval(samples.calibrated())
            if median > 0 and (high - low) / 2 / median <= policy.precision:
                break
    return samples


#: How much more waiting for a core than time off the CPU a block may show and still be
#: taken as measured: the two come from different clocks.
_SLACK_NS: Final = 20_000
_SLACK_SHARE: Final = 0.01

#: Below any clock's real resolution: keeps a ratio finite when a clock did not move.
_RESOLUTION_S: Final = 1e-9


def _block(min_block_s: float, per_call_s: float) -> int:
    return max(1, math.ceil(min_block_s / max(per_call_s, _RESOLUTION_S)))
