"""Session state: settings, every test's workloads, and the per-test gate. No pytest here."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .collapse import CollapseIndex
from .data import SessionReport, TestWorkloads
from .fingerprint import CURRENT_SCHEME, FingerprintScheme
from .recorder import WorkloadRecorder
from .report import render_collapse, render_session
from .signature import Describer
from .storage import SnapshotDocument, SnapshotEntry, write_report

if TYPE_CHECKING:
    from syrupy.assertion import SnapshotAssertion

#: Key of this plugin's payload in an xdist worker's ``workeroutput``.
WORKER_OUTPUT_KEY = "pytest_workload"


@dataclass(frozen=True)
class WorkloadSettings:
    """Everything the command line and ini decide, validated once."""

    snapshot: bool = False
    timing: bool = True
    json_path: Path | None = None
    rootdir: Path | None = None


class WorkloadSession:
    """Collects every test's workloads and decides each test's gate."""

    def __init__(
        self, settings: WorkloadSettings, scheme: FingerprintScheme = CURRENT_SCHEME
    ) -> None:
        self.settings = settings
        self.scheme = scheme
        self._tests: dict[str, TestWorkloads] = {}
        self._collapses = CollapseIndex()

    def new_recorder(
        self, nodeid: str, *, max_depth: int, describe: Describer | None = None
    ) -> WorkloadRecorder:
        return WorkloadRecorder(
            nodeid,
            max_depth=max_depth,
            timing=self.settings.timing,
            scheme=self.scheme,
            describe=describe,
            rootdir=self.settings.rootdir,
        )

    def finish_test(
        self, recorder: WorkloadRecorder, snapshot: SnapshotAssertion | None, *, passed: bool
    ) -> list[str]:
        """Keep the test's workloads; return the reasons it fails (empty if it passes)."""
        recorder.stop()
        test = recorder.workloads()
        self._tests[test.nodeid] = test
        if not passed:
            return []
        failures = [f"pytest-workload could not record: {e}" for e in recorder.errors]
        if self.settings.snapshot:
            failures += [
                render_collapse(c)
                for c in self._collapses.add_workloads(test.nodeid, test.workloads)
            ]
            if snapshot is not None:
                failure = self._check_snapshot(snapshot, test)
                failures += [failure] if failure else []
        return failures

    def _check_snapshot(self, snapshot: SnapshotAssertion, test: TestWorkloads) -> str | None:
        from .snapshot import check_snapshot

        document = SnapshotDocument(
            self.scheme.version, tuple(SnapshotEntry.from_workload(w) for w in test)
        )
        return check_snapshot(snapshot, document, self.settings.rootdir)

    @property
    def tests(self) -> tuple[TestWorkloads, ...]:
        return tuple(self._tests[k] for k in sorted(self._tests))

    def report(self) -> SessionReport:
        return SessionReport(scheme=self.scheme.version, tests=self.tests)

    def terminal_lines(self) -> list[str]:
        return render_session(self.tests)

    def write_json(self) -> Path | None:
        path = self.settings.json_path
        if path is not None:
            write_report(path, self.report())
        return path

    def worker_payload(self) -> dict[str, Any]:
        """What an xdist worker sends to the controller: plain data."""
        return {"tests": [t.to_dict() for t in self._tests.values()]}

    def merge_worker_payload(self, payload: dict[str, Any]) -> None:
        self.add_tests(TestWorkloads.from_dict(t) for t in payload.get("tests", ()))

    def add_tests(self, tests: Iterable[TestWorkloads]) -> None:
        for test in tests:
            self._tests[test.nodeid] = test
