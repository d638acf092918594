"""The collapse gate: distinct workloads that share a built-in hash or a user key."""

from __future__ import annotations

from collections.abc import Iterable

from .._core.notes import GateResult
from .._workload.workload import TestWorkloads
from .collapse import Collapse, KeyChecks
from .collapse_text import render_collapse


class KeysGate:
    """The session's one collapse index. Each test is checked once, against every test checked
    before it: as it runs, so that it can fail, or once every test is in, for a test that
    failed or that an xdist worker sent. Every collapse found is kept, for the summary."""

    def __init__(self) -> None:
        self._checks = KeyChecks()
        self.found: list[Collapse] = []
        self._waiting: dict[str, None] = {}
        #: Which xdist worker's payload (counted from 1) sent each test.
        self._sender: dict[str, int] = {}

    def wait(self, nodeids: Iterable[str], *, sent: bool = False) -> None:
        """Leave tests to ``check_waiting``; ``sent``: those of one worker's payload."""
        sender = max(self._sender.values(), default=0) + 1
        for nodeid in nodeids:
            self._waiting[nodeid] = None
            if sent:
                self._sender[nodeid] = sender

    def check(self, test: TestWorkloads) -> GateResult:
        """Fails a test whose workloads collapse with one checked earlier."""
        self._waiting.pop(test.nodeid, None)
        return GateResult(failures=tuple(render_collapse(c) for c in self._collapses(test)))

    def check_waiting(self, tests: Iterable[TestWorkloads]) -> list[str]:
        """Check those of ``tests`` that waited, in that order; say the collapses between two
        payloads' tests, of which no worker saw both."""
        waited = [t for t in tests if t.nodeid in self._waiting]
        self._waiting.clear()
        return [
            render_collapse(c)
            for test in waited
            for c in self._collapses(test)
            if self._sender.get(c.first.nodeid) != self._sender.get(c.second.nodeid)
        ]

    def _collapses(self, test: TestWorkloads) -> list[Collapse]:
        found = self._checks.check(test)
        self.found += found
        return found
