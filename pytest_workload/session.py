"""Session state: settings, every test's workloads, and the per-test gate. No pytest here."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .collapse import KeyChecks
from .data import SessionReport, TestWorkloads
from .fingerprint import CURRENT_SCHEME, FingerprintScheme
from .recorder import Keyer, WorkloadRecorder
from .report import render_collapse, render_session
from .signature import Describer, Json
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
    migrate: bool = False
    rootdir: Path | None = None


class WorkloadSession:
    """Collects every test's workloads and decides each test's gate."""

    def __init__(
        self,
        settings: WorkloadSettings,
        scheme: FingerprintScheme = CURRENT_SCHEME,
        legacy_schemes: Sequence[FingerprintScheme] = (),
    ) -> None:
        self.settings = settings
        self.scheme = scheme
        self.legacy_schemes = tuple(s for s in legacy_schemes if s.version != scheme.version)
        self.notes: list[str] = []
        self._tests: dict[str, TestWorkloads] = {}
        self._checks = KeyChecks()

    def new_recorder(
        self,
        nodeid: str,
        *,
        max_depth: int,
        describe: Describer | None = None,
        keyer: Keyer | None = None,
    ) -> WorkloadRecorder:
        return WorkloadRecorder(
            nodeid,
            max_depth=max_depth,
            timing=self.settings.timing,
            scheme=self.scheme,
            describe=describe,
            keyer=keyer,
            alternate_schemes=self.legacy_schemes if self.settings.migrate else (),
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
            failures += [render_collapse(c) for c in self._checks.check(test)]
            if snapshot is not None:
                failures += self._check_snapshot(snapshot, test)
        return failures

    def _check_snapshot(self, snapshot: SnapshotAssertion, test: TestWorkloads) -> list[str]:
        from .snapshot import check_snapshot

        document = SnapshotDocument(
            self.scheme.version, tuple(SnapshotEntry.from_workload(w) for w in test)
        )
        legacy = self._legacy_documents(test) if self.settings.migrate else None
        result = check_snapshot(snapshot, document, self.settings.rootdir, legacy)
        if result.note is not None:
            self.notes.append(result.note)
        return [] if result.failure is None else [result.failure]

    def _legacy_documents(self, test: TestWorkloads) -> dict[int, SnapshotDocument]:
        """The test's table as each older scheme would have written it."""
        documents = {}
        for scheme in self.legacy_schemes:
            alternate = {
                w.hash: a for w in test for a in w.alternates if a.scheme == scheme.version
            }
            entries = tuple(
                dataclasses.replace(
                    SnapshotEntry.from_workload(w),
                    structure_hash=alternate[w.hash].structure_hash,
                    hash=alternate[w.hash].hash,
                    parent=None if w.parent is None else alternate[w.parent].hash,
                )
                for w in test
            )
            documents[scheme.version] = SnapshotDocument(scheme.version, entries)
        return documents

    @property
    def tests(self) -> tuple[TestWorkloads, ...]:
        return tuple(self._tests[k] for k in sorted(self._tests))

    def report(self) -> SessionReport:
        return SessionReport(scheme=self.scheme.version, tests=self.tests)

    def terminal_lines(self) -> list[str]:
        return render_session(self.tests)

    def write_json(self, extend: Callable[[dict[str, Json]], None] | None = None) -> Path | None:
        """Write the JSON report (``extend`` may add fields to it first)."""
        path = self.settings.json_path
        if path is not None:
            write_report(path, self.report(), extend)
        return path

    def worker_payload(self) -> dict[str, Any]:
        """What an xdist worker sends to the controller: plain data."""
        return {"tests": [t.to_dict() for t in self._tests.values()], "notes": self.notes}

    def merge_worker_payload(self, payload: dict[str, Any]) -> None:
        self.add_tests(TestWorkloads.from_dict(t) for t in payload.get("tests", ()))
        self.notes.extend(payload.get("notes", ()))

    def add_tests(self, tests: Iterable[TestWorkloads]) -> None:
        for test in tests:
            self._tests[test.nodeid] = test
