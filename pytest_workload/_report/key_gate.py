"""The collapse gate: distinct workloads that share a built-in hash or a user key."""

from __future__ import annotations

from .._core.gate_result import GateResult
from .._workload.workload import TestWorkloads
from .collapse import KeyChecks
from .collapse_text import render_collapse


class KeysGate:
    """Fails a test whose workloads collapse with one seen earlier in this process."""

    def __init__(self) -> None:
        self._checks = KeyChecks()

    def check(self, test: TestWorkloads) -> GateResult:
        return GateResult(failures=tuple(render_collapse(c) for c in self._checks.check(test)))
