"""What a run says while it times a test's workloads after the test body: a large model's
replays can take minutes, during which pytest itself prints nothing."""

from __future__ import annotations

import time
from collections.abc import Callable

from .._core.text import one_line

#: Timing shorter than this says nothing: most tests time their workloads in well under it.
QUIET_S = 2.0


class TimingProgress:
    """Called with ``(nodeid, done, total)`` before each workload is timed and once all are.

    Once a test's timing has taken ``QUIET_S``, ``show(line, finished)`` is given a line saying
    how many workloads, of which test, and how long so far: on a terminal (``live``) at every
    workload, to rewrite one line in place, then ``finished`` to erase it; elsewhere (a log, CI)
    once per test, a line that stays.
    """

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
