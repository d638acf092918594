"""Measuring a test's new top-level workloads after its body, within the session's budget:
which are replayed, and what stands in where one is not (docs/explanation/timing.md, "What
cannot be measured faithfully is said"; an unmarked test: docs/how-to/existing-suite.md)."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Literal, TypeVar

from .._core.text import one_line
from .._workload.timing import (
    BUDGET_SPENT,
    FIRST_CALL,
    OFF,
    UNMARKED,
    UNMARKED_NOT_MEASURED,
    UNMARKED_OBSERVED,
    XDIST_NOT_MEASURED,
    XDIST_OBSERVED,
    Measured,
    Method,
    Timing,
    not_measured,
    observed,
)
from .device import device_for
from .first_call import FirstCall
from .replay import replay
from .stopwatch import TimingPolicy, summarize

T = TypeVar("T")

#: Timing shorter than this says nothing: most tests time their workloads in well under it.
QUIET_S = 2.0


class SessionBudget:
    """Seconds of timing left to this process (``--workload-session-budget``): workloads the
    perf gate judges (``gated(workload hash, device)``) are always timed, and charged too; the
    rest while the budget lasts, in the order the tests run."""

    def __init__(
        self,
        budget_s: float,
        gated: Callable[[str, str], bool],
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.budget_s = budget_s
        self._gated = gated
        self._clock = clock
        self.spent_s = 0.0

    def admits(self, workload_hash: str, device: str) -> bool:
        return self.spent_s < self.budget_s or self._gated(workload_hash, device)

    def charge(self, timed: Callable[[], T]) -> T:
        """Run ``timed`` (a timing), counting its time against the budget."""
        started = self._clock()
        try:
            return timed()
        finally:
            self.spent_s += self._clock() - started


class TimingProgress:
    """Told ``(nodeid, done, total)`` before each workload is timed and once all are. Once a
    test's timing has taken ``QUIET_S``, ``show(line, finished)`` is given a line of progress: on
    a terminal (``live``) at every workload, rewritten in place, then ``finished`` to erase it;
    elsewhere (a log, CI) once per test."""

    def __init__(
        self,
        show: Callable[[str, bool], None],
        *,
        live: bool,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._show, self._live, self._clock = show, live, clock
        self._started = 0.0
        self._shown = False

    def __call__(self, nodeid: str, done: int, total: int) -> None:
        now = self._clock()
        if done == 0:
            self._started, self._shown = now, False
            return
        if done == total:
            if self._shown and self._live:
                self._show("", True)
            return
        elapsed = now - self._started
        if elapsed < QUIET_S or (self._shown and not self._live):
            return
        self._shown = True
        self._show(
            f"pytest-workload: timing the workloads of {one_line(nodeid)} after its body: "
            f"{done} of {total} done, {elapsed:.0f} s so far",
            False,
        )


#: What may be replayed: ``timing`` (every workload, the default), ``counts`` (only where the
#: first call could not count FLOPs or a CUDA peak is wanted: beside other xdist workers),
#: ``never`` (a test recorded only by ``--workload-record=all``).
Replays = Literal["timing", "counts", "never"]


def _observed(call: FirstCall, how: Method, unobserved: Method) -> tuple[Timing | None, Method]:
    if not call.observed_s:
        return None, unobserved
    return summarize(list(call.observed_s), call.device, "recorded calls"), how


def _done(
    call: FirstCall, timing: Timing | None, how: Method, line: Method | str | None
) -> tuple[Measured, str | None]:
    """The measurement of a call not replayed, and its line for the report; FLOPs the first
    call did not count say the line's why."""
    flops_how = FIRST_CALL
    if call.flops is None:
        assert line is not None  # (every path without FLOPs says why)
        flops_how = line if isinstance(line, Method) else not_measured(line)
    measured = Measured(how, flops_how, timed=timing, counted=call.flops)
    return measured, None if line is None else str(line)


def measure_call(
    call: FirstCall,
    policy: TimingPolicy | None,
    instead: tuple[Timing | None, Method] = (None, OFF),
    *,
    replays: bool = True,
) -> tuple[Measured, str | None]:
    """The call's measurement, and its line for the report. A replay counts what the first
    call could not, and with a ``policy`` times it; without, the timing is ``instead``. A test
    that did not ask for timing (``replays`` False) is never run again."""
    if call.changed is not None:
        why = not_measured(f"the module changed after its call ({call.changed})")
        return _done(call, None, why, why)
    if call.unsafe is not None:
        if policy is None:
            unsafe = None if call.flops is not None else not_measured(call.unsafe)
            return _done(call, *instead, unsafe)
        timing, how = _observed(
            call,
            observed(call.unsafe),
            not_measured(f"{call.unsafe}, and no call was observed untraced"),
        )
        line = f"timed from its observed calls: {call.unsafe}" if timing else how
        return _done(call, timing, how, line)
    if not replays:
        unmarked = not_measured(f"its first call could not count them, and {UNMARKED}")
        return _done(call, *instead, None if call.flops is not None else unmarked)
    if policy is None and call.flops is not None and device_for(call.device).peak() is None:
        return _done(call, *instead, None)  # nothing a replay would add
    result = replay(
        call.module,
        call.target,
        call.args,
        call.kwargs,
        policy,
        context=call.captured,
        count=call.flops is None,
    )
    if call.flops is not None:
        result = replace(result, flops=FIRST_CALL, counted=call.flops)
    if policy is None:
        result = replace(result, timing=instead[1], timed=instead[0])
    return result, None if result.problem is None else str(not_measured(result.problem))


def measure_calls(
    calls: Sequence[FirstCall],
    policy: TimingPolicy | None,
    budget: SessionBudget | None = None,
    *,
    replays: Replays = "timing",
    progress: Callable[[int, int], None] | None = None,
) -> tuple[list[Measured], list[str]]:
    """A measurement per call, and a line for the report per workload whose measurement is
    missing or approximate (those the budget left untimed, or that were not replayed, are
    counted in the report instead)."""
    measurements, lines = [], []
    for done, call in enumerate(calls):
        if progress is not None:
            progress(done, len(calls))
        bound = None if policy is None else replace(policy, workload=call.workload_hash)
        if replays == "never":
            unmarked = _observed(call, UNMARKED_OBSERVED, UNMARKED_NOT_MEASURED)
            instead = (None, OFF) if bound is None else unmarked
            measured, line = measure_call(call, bound, instead, replays=False)
        elif bound is not None and replays == "counts" and call.unsafe is None:
            xdist = _observed(call, XDIST_OBSERVED, XDIST_NOT_MEASURED)
            measured, line = measure_call(call, None, xdist)
        elif bound is None or budget is None or replays == "counts":
            measured, line = measure_call(call, bound)
        elif budget.admits(call.workload_hash, call.device):
            measured, line = budget.charge(functools.partial(measure_call, call, bound))
        else:
            measured, line = measure_call(call, None, (None, BUDGET_SPENT))
        measurements.append(measured)
        if line is not None:
            lines.append(f"{call.title}: {line}")
    if progress is not None and calls:
        progress(len(calls), len(calls))
    return measurements, lines
