"""What crosses between pytest-xdist processes: a worker's payload, and the controller's
merge of them, with crashed workers and the collapse checks no single worker could make."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._core.canonical import Json
from ._core.errors import WorkloadDataError
from ._core.fields import read_field
from ._core.notes import Note
from ._core.text import one_line
from ._report.collapse import KeyChecks
from ._report.collapse_text import render_collapse
from ._session import WorkloadSession
from ._workload.workload import TestWorkloads

#: Key of this plugin's payload in an xdist worker's ``workeroutput``.
WORKER_OUTPUT_KEY = "pytest_workload"


@dataclass(frozen=True)
class WorkerPayload:
    """Everything one worker recorded, as plain data for ``workeroutput``."""

    tests: tuple[TestWorkloads, ...] = ()
    notes: tuple[Note, ...] = ()
    perf_notes: tuple[Note, ...] = ()
    environment: Json = None
    #: Stored tables the worker used without checking them.
    kept: tuple[str, ...] = ()
    #: Tests the workload gate failed, and the performance regressions among their failures.
    gate_failed: int = 0
    regressions: int = 0

    @classmethod
    def of(cls, session: WorkloadSession) -> WorkerPayload:
        return cls(
            session.tests,
            tuple(session.notes),
            tuple(session.perf_notes),
            session.environment(),
            tuple(session.snapshots.kept),
            session.gate_failed,
            session.regressions,
        )

    def to_dict(self) -> dict[str, Json]:
        return {
            "tests": [t.to_dict() for t in self.tests],
            "notes": [n.to_dict() for n in self.notes],
            "perf_notes": [n.to_dict() for n in self.perf_notes],
            "environment": self.environment,
            "kept": list(self.kept),
            "gate_failed": self.gate_failed,
            "regressions": self.regressions,
        }

    @classmethod
    def from_dict(cls, data: Any) -> WorkerPayload:
        if not isinstance(data, dict):
            raise WorkloadDataError(f"xdist worker payload: expected an object, got {data!r:.80}")
        return cls(
            tuple(TestWorkloads.from_dict(t) for t in data.get("tests", ())),
            tuple(Note.from_dict(n) for n in data.get("notes", ())),
            tuple(Note.from_dict(n) for n in data.get("perf_notes", ())),
            data.get("environment"),
            tuple(str(k) for k in data.get("kept", ())),
            read_field(data, "gate_failed", int, optional=True) or 0,
            read_field(data, "regressions", int, optional=True) or 0,
        )


class WorkerMerge:
    """The controller's side: which worker ran what, and what each one sent."""

    def __init__(self, session: WorkloadSession) -> None:
        self.session = session
        self._worker_of: dict[str, str] = {}
        self._ran_on: dict[str, dict[str, None]] = {}
        #: Workers that crashed or were killed: their tests' uses of snapshots never arrived.
        self.crashed: list[str] = []

    def ran_on(self, worker: str, nodeid: str) -> None:
        """Note that a test ran on a worker, to name it if that worker crashes."""
        self._ran_on.setdefault(worker, {})[nodeid] = None

    def merge(self, worker: str, data: Any) -> None:
        """Take in what one worker recorded; a crashed worker sent nothing."""
        if data is None:
            self.crashed.append(worker)
            ran = list(self._ran_on.get(worker, {}))
            kept = (
                "; no snapshot was deleted as unused, since its tests' uses are unknown (as "
                "with --snapshot-no-cleanup)"
                if self.session.settings.update
                else ""
            )
            self.session.problems.append(
                f"xdist worker {worker} sent no workload data (it crashed or was killed): the "
                "workloads of its tests are missing from this report"
                + (f": {', '.join(one_line(n) for n in ran)}" if ran else "")
                + kept
            )
            return
        payload = WorkerPayload.from_dict(data)
        for test in payload.tests:
            self.session.add(test)
            self._worker_of[test.nodeid] = worker
        self.session.adopt_environment(payload.environment)
        self.session.notes.extend(payload.notes)
        self.session.perf_notes.extend(payload.perf_notes)
        self.session.snapshots.kept.extend(payload.kept)
        self.session.gate_failed += payload.gate_failed
        self.session.regressions += payload.regressions

    def check_across_workers(self) -> list[str]:
        """Collapses between tests that ran on different workers: no worker saw both, so the
        controller decides them, once, over everything merged."""
        if not self.session.settings.snapshot or not self._worker_of:
            return []
        checks, found = KeyChecks(), []
        for test in self.session.tests:
            for c in checks.check(test):
                if self._worker_of.get(c.first.nodeid) != self._worker_of.get(c.second.nodeid):
                    found.append(render_collapse(c))
        self.session.problems.extend(found)
        return found
