"""Measuring a test's new top-level workloads once the test body has ended.

Per workload, in order of first call: FLOPs come from its first call where they were counted
there. A replay times it (and counts FLOPs for a compiled module) under the captured state,
isolated from the program; it is refused when the module no longer computes what the call
computed (its structure, a dtype or a device changed since), and replaced by the observed
calls' times when a replay could change state it cannot put back, or when xdist workers share
the cores (a replayed timing there is biased, and gates nothing). A test that did not ask for
timing (recorded by ``--workload-record=all`` alone) is never replayed: a replay re-runs a
forward hundreds of times, which multiplied an unedited suite's time, and whatever the forward
does outside the module tree happened again each time. Every outcome is said in a
``Measured`` and, where something is missing or approximate, in a line for the report.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from .._workload.timing import (
    BUDGET_SPENT,
    FIRST_CALL,
    NOT_MEASURED,
    OFF,
    REPLAYED,
    UNMARKED,
    UNMARKED_NOT_MEASURED,
    UNMARKED_OBSERVED,
    XDIST_NOT_MEASURED,
    XDIST_OBSERVED,
    Measured,
    Timing,
    not_measured,
    observed,
)
from .budget import SessionBudget
from .context import CallContext, mismatch
from .replay import Measurement, replay
from .stopwatch import TimingPolicy, summarize

if TYPE_CHECKING:
    from torch import nn

#: What may be replayed: ``timing`` (every workload, the default), ``counts`` (only where the
#: first call could not count FLOPs or a CUDA peak is wanted: beside other xdist workers),
#: ``never`` (a test recorded only by ``--workload-record=all``).
Replays = Literal["timing", "counts", "never"]


@dataclass(frozen=True)
class RecordedCall:
    """A new workload's first call as the test made it (process-local, never stored)."""

    name: str
    class_name: str
    module: nn.Module
    target: nn.Module
    #: copies of the inputs, taken before the call ran
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    context: CallContext
    device: str
    #: the workload's hash, which the timing policy's suspect is asked about
    workload_hash: str
    #: counted on the first call (None: not counted there)
    flops: int | None = None
    #: why a replay could change what it cannot put back (None: it cannot)
    unsafe: str | None = None
    #: why the module no longer is the one called (None: it still is)
    changed: str | None = None
    #: seconds of the calls observed untraced (without FLOP counting), on the CPU
    observed_s: tuple[float, ...] = ()


def _observed(call: RecordedCall, how: str, unobserved: str) -> tuple[Timing | None, str]:
    """The observed calls' timing and ``how`` it was obtained; None and ``unobserved`` where
    no call was observed."""
    if not call.observed_s:
        return None, unobserved
    return summarize(list(call.observed_s), call.device, "recorded calls"), how


def _done(
    call: RecordedCall, timing: Timing | None, how: str, line: str | None, result: Measurement
) -> tuple[Measurement, str | None]:
    """The measurement, with FLOPs from the first call where counted there, and ``line`` (what
    is missing or approximate) for the report."""
    if call.flops is not None:
        flops, flops_how = call.flops, FIRST_CALL
    elif result.flops is not None:
        flops, flops_how = result.flops, REPLAYED
    else:
        reason = line or "no replay counted them"
        flops, flops_how = None, reason if reason.startswith(NOT_MEASURED) else not_measured(reason)
    return replace(result, timing=timing, flops=flops, measured=Measured(how, flops_how)), line


def measure_call(call: RecordedCall, policy: TimingPolicy | None) -> tuple[Measurement, str | None]:
    """The measurement of one workload, and a line for the report when it is incomplete."""
    none = Measurement()
    changed = mismatch(call.context, call.target) or call.changed
    if changed is not None:
        why = not_measured(f"the module changed after its call ({changed})")
        return _done(call, None, why, why, none)
    if call.unsafe is not None:
        if policy is None:
            line = None if call.flops is not None else not_measured(call.unsafe)
            return _done(call, None, OFF, line, none)
        timing, how = _observed(
            call,
            observed(call.unsafe),
            not_measured(f"{call.unsafe}, and no call was observed untraced"),
        )
        line = f"timed from its observed calls: {call.unsafe}" if timing else how
        return _done(call, timing, how, line, none)
    if policy is None and call.flops is not None and not call.device.startswith("cuda"):
        return _done(call, None, OFF, None, none)  # nothing a replay would add
    result = replay(
        call.module,
        call.target,
        call.args,
        call.kwargs,
        policy,
        context=call.context,
        count=call.flops is None,
    )
    if result.problem is not None:
        why = not_measured(result.problem)
        return _done(call, None, OFF if policy is None else why, why, result)
    return _done(call, result.timing, REPLAYED if policy else OFF, None, result)


def _untimed(call: RecordedCall) -> tuple[Measurement, str | None]:
    """A workload the session's budget leaves untimed: FLOPs only, marked as such."""
    measured, line = measure_call(call, None)
    how = measured.measured
    if how is None or how.timing != OFF:  # (it could not have been timed anyway: says why)
        return measured, line
    return replace(measured, measured=replace(how, timing=BUDGET_SPENT)), line


def _unreplayed(call: RecordedCall, policy: TimingPolicy) -> tuple[Measurement, str | None]:
    """A workload timed beside other xdist workers: from the calls the test made, never by a
    replay (FLOPs as always: a replay counts them where the first call could not)."""
    if call.unsafe is not None:  # (never replayed: timed from its observed calls, says why)
        return measure_call(call, policy)
    measured, line = measure_call(call, None)
    how = measured.measured
    if how is None or how.timing != OFF:  # (it could not have been timed anyway: says why)
        return measured, line
    timing, why = _observed(call, XDIST_OBSERVED, XDIST_NOT_MEASURED)
    return replace(measured, timing=timing, measured=replace(how, timing=why)), line


def _never_replayed(
    call: RecordedCall, policy: TimingPolicy | None
) -> tuple[Measurement, str | None]:
    """A workload of a test that did not ask for timing: timed from the calls the test made,
    FLOPs from its first call; nothing is run again."""
    if call.unsafe is not None or mismatch(call.context, call.target) or call.changed:
        return measure_call(call, policy)  # (never replays these: says why)
    line = (
        None
        if call.flops is not None
        else not_measured(f"its first call could not count them, and {UNMARKED}")
    )
    if policy is None:
        return _done(call, None, OFF, line, Measurement())
    timing, how = _observed(call, UNMARKED_OBSERVED, UNMARKED_NOT_MEASURED)
    return _done(call, timing, how, line, Measurement())


def measure_calls(
    calls: Sequence[RecordedCall],
    policy: TimingPolicy | None,
    budget: SessionBudget | None = None,
    *,
    replays: Replays = "timing",
    progress: Callable[[int, int], None] | None = None,
) -> tuple[list[Measurement], list[str]]:
    """A measurement per call (timing unless ``policy`` is None, or ``budget`` declines it;
    from the calls the test made unless ``replays`` is ``timing``), and lines for the report,
    one per workload whose measurement is missing or approximate (those the budget left
    untimed, or that were not replayed, are counted in the report instead). ``progress`` is
    told how many calls of how many are measured, before each and once all are."""
    measurements, lines = [], []
    for done, call in enumerate(calls):
        if progress is not None:
            progress(done, len(calls))
        bound = None if policy is None else policy.for_workload(call.workload_hash)
        if replays == "never":
            measured, line = _never_replayed(call, bound)
        elif bound is not None and replays == "counts":
            measured, line = _unreplayed(call, bound)
        elif bound is None or budget is None:
            measured, line = measure_call(call, bound)
        elif budget.admits(call.workload_hash, call.device):
            measured, line = budget.charge(functools.partial(measure_call, call, bound))
        else:
            measured, line = _untimed(call)
        measurements.append(measured)
        if line is not None:
            lines.append(f"{call.name} ({call.class_name}): {line}")
    if progress is not None and calls:
        progress(len(calls), len(calls))
    return measurements, lines
