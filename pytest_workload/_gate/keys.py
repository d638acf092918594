"""The collapse gate: distinct workloads that share a built-in hash or a user key."""

from __future__ import annotations

from .._model.workload import TestWorkloads
from .._render.failures import render_collapse
from .._verdict.collapse import KeyChecks
from .result import GateResult


class KeysGate:
    """Fails a test whose workloads collapse with one seen earlier in this process."""

    def __init__(self) -> None:
        self._checks = KeyChecks()

    def check(self, test: TestWorkloads) -> GateResult:
        return GateResult(failures=tuple(render_collapse(c) for c in self._checks.check(test)))
