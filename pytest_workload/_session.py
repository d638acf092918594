"""Session state: settings, every test's workloads, and the per-test gate. No pytest here."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ._gate.baselines import BaselineStore
from ._identity.describe import Describer
from ._identity.fingerprint import CURRENT_SCHEME, FingerprintScheme
from ._measure.device import device_identity, environment, resolve_device
from ._measure.timing import TimingPolicy
from ._model.baseline import BASELINE_DIRNAME, Baseline
from ._model.canonical import Json, canonical_json
from ._model.errors import CorruptFileError
from ._model.files import write_report
from ._model.snapshot import SnapshotDocument, SnapshotEntry
from ._model.workload import SessionReport, TestWorkloads, Workload
from ._record.recorder import Keyer, WorkloadRecorder
from ._render.failures import (
    render_collapse,
    render_contended,
    render_faster,
    render_missing_baseline,
    render_regression,
)
from ._render.report import render_session
from ._verdict.collapse import KeyChecks
from ._verdict.distance import nearest
from ._verdict.drift import CONTENDED_LOAD, DEFAULT_TOLERANCE, judge

if TYPE_CHECKING:
    import torch
    from syrupy.assertion import SnapshotAssertion


#: ``on`` gates timings (relaxed to notes when xdist workers share the machine), ``strict``
#: gates them even then, ``off`` leaves timings to the report.
PerfMode = Literal["on", "off", "strict"]


#: Key of this plugin's payload in an xdist worker's ``workeroutput``.
WORKER_OUTPUT_KEY = "pytest_workload"


@dataclass(frozen=True)
class WorkloadSettings:
    """Everything the command line and ini decide, validated once."""

    snapshot: bool = False
    update: bool = False
    timing: bool = True
    time_budget_s: float = TimingPolicy.budget_s
    perf: PerfMode = "on"
    workers: int = 1
    tolerance: float = DEFAULT_TOLERANCE
    baselines: Path = Path(BASELINE_DIRNAME)
    device: str = "auto"
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
        self.perf_notes: list[str] = []
        self.problems: list[str] = []
        self._stores: dict[str, BaselineStore] = {}
        self._device: torch.device | None = None
        self._tests: dict[str, TestWorkloads] = {}
        self._worker_of: dict[str, str] = {}
        self._order: dict[str, int] = {}
        self._checks = KeyChecks()
        self._worker_environment: Json = None
        self._ran_on: dict[str, dict[str, None]] = {}

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

    def device(self) -> torch.device:
        """The device tests are asked to run on (``--workload-device``), resolved once."""
        if self._device is None:
            self._device = resolve_device(self.settings.device)
        return self._device

    @property
    def timing_policy(self) -> TimingPolicy | None:
        return TimingPolicy(budget_s=self.settings.time_budget_s) if self.settings.timing else None

    def finish_test(
        self,
        recorder: WorkloadRecorder,
        snapshot: SnapshotAssertion | None,
        *,
        passed: bool,
        tolerance: float | None = None,
    ) -> list[str]:
        """Measure and keep the test's workloads; return the reasons it fails (if any)."""
        recorder.stop()
        if passed:
            for problem in recorder.measure(self.timing_policy):
                self.perf_notes.append(f"{recorder.nodeid}: {problem}")
        test = recorder.workloads()
        self._tests[test.nodeid] = test
        if snapshot is not None and not (passed and self.settings.snapshot):
            from ._gate.syrupy_ext import keep_snapshot

            keep_snapshot(snapshot)  # a failed test's table says nothing about the stored one
        if not passed:
            return []
        failures = [f"pytest-workload could not record: {e}" for e in recorder.errors]
        if self.settings.snapshot:
            failures += [render_collapse(c) for c in self._checks.check(test)]
            if snapshot is not None:
                failures += self._check_snapshot(snapshot, test)
            if self.settings.perf != "off":
                failures += self._check_perf(
                    test, self.settings.tolerance if tolerance is None else tolerance
                )
        return failures

    def _store(self, device: str) -> BaselineStore:
        import torch

        if device not in self._stores:
            identity = device_identity(torch.device(device))
            self._stores[device] = BaselineStore(self.settings.baselines, identity)
        return self._stores[device]

    @property
    def _relaxed(self) -> str | None:
        """Why timings cannot gate here, if they cannot: workers compete for the cores."""
        if self.settings.workers > 1 and self.settings.perf != "strict":
            return (
                f"timed while {self.settings.workers} xdist workers shared this machine, so "
                "not failed and no baseline written; run the timing gate without xdist (or "
                "pass --workload-perf=strict)"
            )
        return None

    def _write_baseline(self, w: Workload, store: BaselineStore, note: str) -> None:
        assert w.timing is not None
        load = w.timing.others_load or 0.0
        if self._relaxed is not None:
            self.perf_notes.append(f"{note}: not written, {self._relaxed}")
        elif load > CONTENDED_LOAD and self.settings.perf != "strict":
            # a baseline timed under load would excuse, or hide, every later slowdown
            self.perf_notes.append(
                f"{note}: not written, other processes used {load:.0%} of the machine's CPU "
                "while it was timed; rerun the update on a quieter machine"
            )
        else:
            store.put(Baseline.from_workload(w, store.device))
            self.perf_notes.append(note)

    def _check_perf(self, test: TestWorkloads, tolerance: float) -> list[str]:
        """The drift gate for the test's timed top-level workloads."""
        failures = []
        for w in test.roots():
            if w.timing is None:
                continue
            store = self._store(w.timing.device)
            try:
                baseline = store.get(w.hash)
            except CorruptFileError as exc:
                if not self.settings.update:
                    failures.append(f"corrupt timing baseline {exc}; fix or delete it")
                    continue
                baseline = None
            if baseline is None:
                failures += self._no_baseline(w, store)
                continue
            drift = judge(w.timing, baseline.timing, tolerance)
            if drift.kind == "unchanged":
                continue
            if self.settings.update:
                self._write_baseline(
                    w,
                    store,
                    f"timing baseline for {w.name} ({w.class_name}) "
                    f"{w.input_signature.format()} refreshed at {drift.ratio:.2f}x the old one",
                )
            elif drift.contended and self.settings.perf != "strict":
                self.perf_notes.append(render_contended(w, baseline.timing, drift))
            elif drift.kind == "regression":
                message = render_regression(w, baseline.timing, drift, store.device.describe())
                if self._relaxed is None:
                    failures.append(message)
                else:
                    self.perf_notes.append(f"{message}\n  ({self._relaxed})")
            else:
                self.perf_notes.append(render_faster(w, baseline.timing, drift))
        return failures

    def _no_baseline(self, w: Workload, store: BaselineStore) -> list[str]:
        """Record a baseline under update; else a note, with the nearest compatible one."""
        if self.settings.update:
            self._write_baseline(w, store, f"timing baseline {store.path(w.hash)} recorded")
            return []
        try:
            stored = store.all()
        except CorruptFileError as exc:
            return [f"corrupt timing baseline {exc}; fix or delete it"]
        others = {canonical_json(b.key): b for b in stored if b.hash != w.hash}
        found = nearest(w.key, [b.key for b in others.values()])
        near = None if found is None else (others[canonical_json(found[0])], found[1])
        self.perf_notes.append(render_missing_baseline(w, store.device.describe(), near))
        return []

    def _check_snapshot(self, snapshot: SnapshotAssertion, test: TestWorkloads) -> list[str]:
        from ._gate.syrupy_ext import check_snapshot

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

    def test(self, nodeid: str) -> TestWorkloads | None:
        return self._tests.get(nodeid)

    def set_collection_order(self, nodeids: Sequence[str]) -> None:
        """Report tests in collection order, whichever process or order they ran in."""
        if not self._order:
            self._order = {nodeid: i for i, nodeid in enumerate(nodeids)}

    @property
    def tests(self) -> tuple[TestWorkloads, ...]:
        last = len(self._order)
        ordered = sorted(self._tests, key=lambda k: (self._order.get(k, last), k))
        return tuple(self._tests[k] for k in ordered)

    def _environment(self) -> Json:
        """Where this process measured: None in a process that never imported torch, such
        as an xdist controller, which reports its workers' environment instead."""
        return environment(self.device()) if "torch" in sys.modules else None

    def report(self) -> SessionReport:
        env = self._worker_environment or self._environment()
        return SessionReport(
            scheme=self.scheme.version,
            tests=self.tests,
            environment=env,
            problems=tuple(self.problems),
        )

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
        return {
            "tests": [t.to_dict() for t in self._tests.values()],
            "notes": self.notes,
            "perf_notes": self.perf_notes,
            "environment": self._environment(),
        }

    def ran_on(self, worker: str, nodeid: str) -> None:
        """Note that a test ran on an xdist worker, to name it if that worker crashes."""
        self._ran_on.setdefault(worker, {})[nodeid] = None

    def merge_worker_payload(self, worker: str, payload: dict[str, Any] | None) -> None:
        """Take in what one xdist worker recorded; a crashed worker sent nothing."""
        if payload is None:
            ran = list(self._ran_on.get(worker, {}))
            self.problems.append(
                f"xdist worker {worker} sent no workload data (it crashed or was killed): the "
                "workloads of its tests are missing from this report"
                + (f": {', '.join(ran)}" if ran else "")
            )
            return
        for data in payload.get("tests", ()):
            test = TestWorkloads.from_dict(data)
            self._tests[test.nodeid] = test
            self._worker_of[test.nodeid] = worker
        self._worker_environment = self._worker_environment or payload.get("environment")
        self.notes.extend(payload.get("notes", ()))
        self.perf_notes.extend(payload.get("perf_notes", ()))

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
