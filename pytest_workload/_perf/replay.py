"""Measuring a top-level workload by replaying its first call after the test.

A replay runs under the state the call was made in, on a copy of its inputs, isolated from the
program (:mod:`.isolation`); a Hugging Face cache among the inputs is put back after every
call. An exception from a replay (``pytest.fail``, ``SystemExit`` too) is returned as a
problem, never raised; only ``KeyboardInterrupt`` goes through.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from .._tracing import DevicePeak, count_flops, device_memory
from .._workload.timing import Measured, Timing
from .device import timing_threads
from .first_call import CallContext, applied, capture, copy_inputs, input_objects
from .isolation import AttributeState, isolated
from .stopwatch import TimingPolicy, Unmeasured, pin_allocator, stopwatch_for, time_call

if TYPE_CHECKING:
    import torch
    from torch import nn


@functools.cache
def calibration_kernel(device: str) -> Callable[[], object]:
    """A small fixed workload timed beside every replayed one (built once per device).

    Its speed tracks the machine's (frequency, a neighbour's share of the caches and memory
    bandwidth, a CPU quota), so the ratio of a workload's time to the kernel's divides out what
    moved them both. A mix of the operations models are made of, about 0.3 ms on one core of a
    2026 x86 CPU; a private generator leaves the global random state alone.
    """
    import torch
    import torch.nn.functional as F

    generator = torch.Generator().manual_seed(0)

    def tensor(*shape: int) -> torch.Tensor:
        return torch.rand(*shape, generator=generator, dtype=torch.float32).to(device)

    image, filters, bias = tensor(1, 8, 32, 32), tensor(16, 8, 3, 3), tensor(16)
    rows, weight = tensor(64, 256), tensor(256, 256)

    def run() -> object:
        with torch.no_grad():
            return (
                F.relu(F.conv2d(image, filters, bias, padding=1)).sum()
                + torch.tanh(rows @ weight).sum()
            )

    return run


@dataclass(frozen=True)
class Measurement:
    """What a replay found; ``problem`` says why something is missing."""

    timing: Timing | None = None
    flops: int | None = None
    peak_memory_bytes: int | None = None
    problem: str | None = None
    #: how the numbers were obtained (set once a workload's measurement is complete)
    measured: Measured | None = None


def device_of(module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> torch.device:
    """Where a call runs: the module's first parameter or buffer, else its first tensor input."""
    import torch

    first = next(itertools.chain(module.parameters(), module.buffers()), None)
    if first is not None:  # (found without walking the rest of the tree)
        return first.device
    for value in (*args, *kwargs.values()):
        if isinstance(value, torch.Tensor):
            return value.device
    return torch.device("cpu")


def _timed(
    call: Callable[[], object],
    device: torch.device,
    policy: TimingPolicy,
    reference: Callable[[], object],
) -> Timing:
    """On the CPU, on ``TIMING_THREADS`` threads, recorded in the timing."""
    if device.type != "cpu":
        return time_call(call, stopwatch_for(device), policy, str(device), reference)
    pin_allocator()
    with timing_threads() as threads:
        timing = time_call(call, stopwatch_for(device), policy, str(device), reference)
    return replace(timing, threads=threads)


def replay(
    module: nn.Module,
    target: nn.Module,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    policy: TimingPolicy | None,
    *,
    context: CallContext | None = None,
    count: bool = True,
) -> Measurement:
    """Measure calls of ``module`` whose unwrapped module is ``target``, under ``context``
    (default: the state now): peak memory on CUDA, FLOPs (when ``count``) on ``target``, whose
    wrapper would recompile under the counter, and timing (unless ``policy`` is None) on
    ``module``, so a compiled model is timed compiled."""
    context = capture(target) if context is None else context
    device = device_of(target, args, kwargs)
    reference = None if policy is None else calibration_kernel(str(device))
    flops = peak = timing = None
    try:
        with isolated((module, target)), applied(context, target):
            if count:
                flops = count_flops(target, *copy_inputs((args, kwargs))[0])
            (a, k), _ = copy_inputs((args, kwargs))
            # an input the call changes (a cache it grows) is put back after each call, so
            # each computes the first
            caches = [AttributeState(part) for part in input_objects((a, k))]

            def call() -> None:
                module(*a, **k)
                for cache in caches:
                    cache.restore()

            memory = device_memory(device)
            if memory is not None:
                peak_of = DevicePeak(memory)
                peak_of.begin()
                call()
                peak = peak_of.end()
            if policy is not None and reference is not None:
                timing = _timed(call, device, policy, reference)
    except KeyboardInterrupt:
        raise
    except Unmeasured as exc:
        return Measurement(timing, flops, peak, str(exc))
    except BaseException as exc:  # the test's outcome is the test's own
        return Measurement(timing, flops, peak, f"the replay raised {type(exc).__name__}: {exc}")
    return Measurement(timing, flops, peak)
