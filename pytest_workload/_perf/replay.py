"""Measuring a top-level workload by replaying its first call after the test.

A replay runs under the state the call was made in, on a copy of its inputs, isolated from the
program (:mod:`.isolation`); a Hugging Face cache among the inputs is put back after every
call. An exception from a replay (``pytest.fail``, ``SystemExit`` too) is returned as a
problem, never raised; only ``KeyboardInterrupt`` goes through.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .._tracing import count_flops
from .._workload.timing import OFF, REPLAYED, Measured, not_measured
from .device import device_for, device_of
from .first_call import CallContext, applied, capture, copy_inputs, input_objects
from .isolation import AttributeState, isolated
from .stopwatch import TimingPolicy, Unmeasured, time_call

if TYPE_CHECKING:
    from torch import nn


def replay(
    module: nn.Module,
    target: nn.Module,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    policy: TimingPolicy | None,
    *,
    context: CallContext | None = None,
    count: bool = True,
) -> Measured:
    """Measure calls of ``module`` whose unwrapped module is ``target``, under ``context``
    (default: the state now): the allocator's peak where the device reads it (CUDA), FLOPs
    (when ``count``) on ``target``, whose wrapper would recompile under the counter, and timing
    (unless ``policy`` is None) on ``module``, so a compiled model is timed compiled."""
    context = capture(target) if context is None else context
    device = device_for(device_of(target, args, kwargs))
    reference = None if policy is None else device.calibration()
    flops = peak = timing = None
    problem: str | None = None
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

            peak_of = device.peak()
            if peak_of is not None:
                peak_of.begin()
                call()
                peak = peak_of.end()
            if policy is not None and reference is not None:
                with device.timing():
                    timing = time_call(call, device.lap, policy, str(device.device), reference)
                timing = replace(timing, threads=device.threads)
    except KeyboardInterrupt:
        raise
    except Unmeasured as exc:
        problem = str(exc)
    except BaseException as exc:  # the test's outcome is the test's own
        problem = f"the replay raised {type(exc).__name__}: {exc}"
    why = None if problem is None else not_measured(problem)
    return Measured(
        OFF if policy is None else why or REPLAYED,
        REPLAYED if flops is not None else why or not_measured("no replay counted them"),
        timed=None if why else timing,
        counted=flops,
        peak_memory_bytes=peak,
        problem=problem,
    )
