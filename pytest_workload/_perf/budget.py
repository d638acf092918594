"""The session's timing budget (``--workload-session-budget``): how long timing may take in all.

A suite with thousands of distinct workloads would spend most of its time timing them (each
replay takes up to ``--workload-time-budget``). Workloads the perf gate judges (those with a
timing baseline) are always timed, so the gate never loses one; the rest are timed while the
budget lasts, in the order the tests run, and every one left untimed says so in the report.
Timing the gated ones is charged to the budget too: the budget bounds the time spent timing.

The clock is injected, so the budget is tested without timing anything.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

#: Asked of each workload about to be timed: ``(workload hash, device) -> gated``.
Gated = Callable[[str, str], bool]


class SessionBudget:
    """Seconds of timing left to this process; owned by the session."""

    def __init__(
        self,
        budget_s: float,
        gated: Gated,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.budget_s = budget_s
        self._gated = gated
        self._clock = clock
        self.spent_s = 0.0

    def admits(self, workload_hash: str, device: str) -> bool:
        """Whether to time this workload: always when it is gated, else while time is left."""
        return self.spent_s < self.budget_s or self._gated(workload_hash, device)

    def charge(self, timed: Callable[[], T]) -> T:
        """Run ``timed`` (a timing), counting its time against the budget."""
        started = self._clock()
        try:
            return timed()
        finally:
            self.spent_s += self._clock() - started
