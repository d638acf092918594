"""Session state: settings, every test's workloads, and the per-test gate. No pytest here."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
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
        self.problems: list[str] = []
        self._tests: dict[str, TestWorkloads] = {}
        self._worker_of: dict[str, str] = {}
        self._order: dict[str, int] = {}
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

    def set_collection_order(self, nodeids: Sequence[str]) -> None:
        """Report tests in collection order, whichever process or order they ran in."""
        if not self._order:
            self._order = {nodeid: i for i, nodeid in enumerate(nodeids)}

    @property
    def tests(self) -> tuple[TestWorkloads, ...]:
        last = len(self._order)
        ordered = sorted(self._tests, key=lambda k: (self._order.get(k, last), k))
        return tuple(self._tests[k] for k in ordered)

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

    def merge_worker_payload(self, worker: str, payload: dict[str, Any] | None) -> None:
        """Take in what one xdist worker recorded; a crashed worker sent nothing."""
        if payload is None:
            self.problems.append(
                f"xdist worker {worker} sent no workload data (it crashed or was killed): the "
                "workloads of its tests are missing from this report"
            )
            return
        for data in payload.get("tests", ()):
            test = TestWorkloads.from_dict(data)
            self._tests[test.nodeid] = test
            self._worker_of[test.nodeid] = worker
        self.notes.extend(payload.get("notes", ()))

    def check_across_workers(self) -> list[str]:
        """Collapses between tests that ran on different xdist workers: no worker saw both,
        so the controller decides them, once, over everything merged."""
        if not self.settings.snapshot or not self._worker_of:
            return []
        checks, found = KeyChecks(), []
        for test in self.tests:
            for c in checks.check(test):
                if self._worker_of.get(c.first.nodeid) != self._worker_of.get(c.second.nodeid):
                    found.append(render_collapse(c))
        self.problems.extend(found)
        return found
