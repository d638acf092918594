"""Session state: settings, every test's workloads, and what the gates (keys, snapshot, perf)
said of each test. No pytest here."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ._core.errors import FileWriteError
from ._core.notes import GateResult, Note
from ._core.strict_json import Json, read_field
from ._core.text import PLAIN, Commands, one_line
from ._fingerprint.structure import CURRENT_SCHEME, FingerprintScheme
from ._perf.baseline import BASELINE_DIRNAME, DEFAULT_TOLERANCE
from ._perf.device import environment, resolve_device
from ._perf.orchestrate import Replays, SessionBudget
from ._perf.perf_gate import PerfGate, PerfMode, larger_budget_for
from ._perf.stopwatch import LIMIT_BUDGETS, TimingPolicy
from ._recording.recorder import WorkloadRecorder
from ._report.collapse import KeyChecks, render_collapse
from ._report.session_report import SessionReport, write_report
from ._report.summary import render_note_counts, render_notes, render_unchecked
from ._snapshot.syrupy_ext import SnapshotGate
from ._workload.workload import TestWorkloads

if TYPE_CHECKING:
    import torch

    from ._snapshot.syrupy_ext import Snapshot


@dataclass(frozen=True)
class WorkloadSettings:
    """Everything the command line and ini decide, validated once: a field per option
    (``--workload-perf-tolerance`` is ``perf_tolerance``), then the run's own."""

    snapshot: bool = False
    accept_upgrade: bool = False
    record: Literal["marked", "all"] = "marked"
    json: Path | None = None
    timing: bool = True
    report: Literal["auto", "tree", "summary"] = "auto"
    time_budget: float = TimingPolicy.budget_s
    session_budget: float | None = None
    device: str = "auto"
    perf: PerfMode = "on"
    perf_tolerance: float = DEFAULT_TOLERANCE
    cost_tolerance: float = 0.0
    baselines: Path = Path(BASELINE_DIRNAME)
    update: bool = False
    workers: int = 1
    rootdir: Path | None = None
    #: the commands hints name, with the flags that chose what this run recorded
    commands: Commands = PLAIN


class WorkloadSession:
    """Collects every test's workloads and what the gates said of them."""

    def __init__(self, settings: WorkloadSettings) -> None:
        self.settings = settings
        self.scheme: FingerprintScheme = CURRENT_SCHEME
        self._judges_timing = settings.snapshot and settings.perf != "off"
        self.notes: list[Note] = []
        self.perf_notes: list[Note] = []
        self.problems: list[str] = []
        #: Tests the workload gate failed, and the performance regressions among their failures.
        self.gate_failed = self.regressions = 0
        self.keys = KeyChecks()
        self.snapshots = SnapshotGate(
            accept_upgrade=settings.accept_upgrade,
            rootdir=settings.rootdir,
            commands=settings.commands,
            cost_tolerance=settings.cost_tolerance,
        )
        # baseline writes never leave the rootdir, or a baseline directory configured outside it
        root, directory = settings.rootdir, Path(os.path.normpath(settings.baselines))
        self.perf = PerfGate(
            settings.baselines,
            mode=settings.perf,
            update=settings.update,
            workers=settings.workers,
            within=root if root is None or directory.is_relative_to(root) else directory,
            commands=settings.commands,
        )
        budget_s = settings.session_budget
        self.budget = None if budget_s is None else SessionBudget(budget_s, self._gated)
        self._device: torch.device | None = None
        self._tests: dict[str, TestWorkloads] = {}
        self._order: dict[str, int] = {}
        self._adopted_environment: Json = None
        #: Told ``(nodeid, done, total)`` while a test's workloads are measured (the glue
        #: shows it: a replay of a large model can take minutes).
        self.progress: Callable[[str, int, int], None] | None = None

    def device(self) -> torch.device:
        if self._device is None:
            self._device = resolve_device(self.settings.device)
        return self._device

    def _gated(self, workload_hash: str, device: str) -> bool:
        """Whether the perf gate judges this workload: the session budget never skips it."""
        return self._judges_timing and self.perf.has_baseline(workload_hash, device)

    def _timing_policy(self, nodeid: str, tolerance: float) -> TimingPolicy | None:
        """Where the perf gate will judge a test's workloads, a timing it would fail is re-timed
        first."""
        if not self.settings.timing:
            return None
        suspect = None
        if self._judges_timing:
            suspect = functools.partial(self.perf.suspect, nodeid, tolerance=tolerance)
        budget_s = self.settings.time_budget
        return TimingPolicy(budget_s, limit_s=budget_s * LIMIT_BUDGETS, suspect=suspect)

    def finish_test(
        self,
        recorder: WorkloadRecorder,
        snapshot: Snapshot | None,
        *,
        passed: bool,
        tolerance: float | None = None,
        fixtures: Sequence[str] = (),
    ) -> GateResult:
        """Measure and keep the test's workloads; the gates' verdict on it (the session keeps
        their notes): why it fails, or what it warns of: without the gate nothing fails a
        test, so what could not be recorded warns.
        ``fixtures``: those the test used that ran a model in their setup."""
        recorder.stop()
        tolerance = self.settings.perf_tolerance if tolerance is None else tolerance
        if passed:
            policy = self._timing_policy(recorder.nodeid, tolerance)
            replays: Replays = "timing" if self.perf.replays else "counts"
            if not recorder.replays:
                replays = "never"
            progress = self.progress and functools.partial(self.progress, recorder.nodeid)
            measured = recorder.measure(policy, self.budget, replays=replays, progress=progress)
            for problem in measured:
                self.perf_notes.append(Note(recorder.nodeid, one_line(problem), "measurement"))
        test = replace(recorder.workloads(), fixtures=tuple(fixtures))
        self.add(test)
        if snapshot is not None and not self.settings.snapshot:
            self.snapshots.skip(snapshot)
        elif snapshot is not None and not passed:
            self.snapshots.keep(snapshot)  # a failed test's table says nothing
        if not passed:
            return GateResult()
        collapses = [render_collapse(c) for c in self.keys.check(test)]
        errors = [f"pytest-workload could not record: {one_line(e)}" for e in recorder.errors]
        if not self.settings.snapshot:
            where = one_line(recorder.nodeid)
            return GateResult(warnings=(f"{where}: " + "\n".join(errors),) if errors else ())
        failures = errors + collapses
        # Under --snapshot-update a test that fails writes nothing: its table (partial, or
        # collapsed) would replace a good one.
        writes = not (failures and self.settings.update)
        if snapshot is not None and not writes:
            self.snapshots.keep(snapshot)
        elif snapshot is not None:
            # a test that is not replayed is one recorded only by --workload-record=all
            verdict, text = self.snapshots.check(snapshot, test, judge_signatures=recorder.replays)
            if text is not None and verdict.fails:
                failures.append(text)
            elif text is not None:
                self.notes.append(Note(test.nodeid, text))
        regressions = 0
        if self.settings.perf != "off" and writes:
            result = self.perf.check(test, tolerance)
            failures += result.failures
            regressions = result.regressions
            self.perf_notes += result.notes
        if failures:
            self.gate_failed += 1
            self.regressions += regressions
        return GateResult(tuple(failures), regressions=regressions)

    def torn_down(self, nodeid: str, *, failed: bool) -> None:
        for gate in (self.snapshots, self.perf):  # (a test that erred did not pass)
            self.notes += gate.torn_down(nodeid, failed=failed)

    def test(self, nodeid: str) -> TestWorkloads:
        return self._tests[nodeid]

    def add(self, test: TestWorkloads) -> None:
        self._tests[test.nodeid] = test
        self.keys.wait([test.nodeid])  # unless it passes here (finish_test)

    def to_payload(self) -> dict[str, Json]:
        """What an xdist worker sends its controller (plain JSON), for ``absorb``."""
        return {
            "tests": [t.to_dict() for t in self.tests],
            "notes": [n.to_dict() for n in self.notes],
            "perf_notes": [n.to_dict() for n in self.perf_notes],
            "environment": self.environment(),
            "kept": list(self.snapshots.kept),
            "not_run": list(self.snapshots.not_run),
            "gate_failed": self.gate_failed,
            "regressions": self.regressions,
        }

    def absorb(self, payload: Mapping[str, Any]) -> None:
        """Take in what an xdist worker sent (``to_payload``): all of it or, if it does not
        read, nothing; its tests' collapse checks wait for ``check_collapses``."""
        tests = [TestWorkloads.from_dict(t) for t in payload.get("tests", ())]
        notes = [Note.from_dict(n) for n in payload.get("notes", ())]
        perf_notes = [Note.from_dict(n) for n in payload.get("perf_notes", ())]
        kept = [str(k) for k in payload.get("kept", ())]
        counts = ("gate_failed", "regressions")  # summed over workers
        failed, regressions = (read_field(payload, k, int, optional=True) or 0 for k in counts)
        self._tests.update((t.nodeid, t) for t in tests)
        self.keys.wait((t.nodeid for t in tests), sent=True)
        self._adopted_environment = self._adopted_environment or payload.get("environment")
        self.notes += notes
        self.perf_notes += perf_notes
        self.snapshots.kept += kept
        self.snapshots.not_run.update(dict.fromkeys(str(n) for n in payload.get("not_run", ())))
        self.gate_failed += failed
        self.regressions += regressions

    def check_collapses(self) -> list[str]:
        """Once every test is in, the collapse checks that waited, in collection order; under
        the gate, one between two xdist workers' tests fails the session (see KeyChecks)."""
        across = [p for p in self.keys.check_waiting(self.tests) if self.settings.snapshot]
        self.problems += across
        return across

    def set_collection_order(self, nodeids: Sequence[str]) -> None:
        """Report tests in collection order, whichever process or order they ran in."""
        if not self._order:
            self._order = {nodeid: i for i, nodeid in enumerate(nodeids)}
            self.snapshots.nodeids = tuple(nodeids)

    def _rank(self, nodeid: str) -> int:
        return self._order.get(nodeid, len(self._order))

    @property
    def tests(self) -> tuple[TestWorkloads, ...]:
        return tuple(self._tests[k] for k in sorted(self._tests, key=lambda k: (self._rank(k), k)))

    def environment(self) -> Json:
        """Where the tests were measured: the first environment an xdist worker sent, else
        this process's (None in one that never imported torch)."""
        if self._adopted_environment:
            return self._adopted_environment
        return environment(self.device()) if "torch" in sys.modules else None

    def report(self) -> SessionReport:
        return SessionReport(
            scheme=self.scheme.version,
            tests=self.tests,
            environment=self.environment(),
            problems=tuple(self.problems),
            notes=tuple(self._ordered(self.perf_notes + self.notes)),
        )

    def _ordered(self, notes: list[Note]) -> list[Note]:
        return sorted(notes, key=lambda n: self._rank(n.nodeid))

    def note_lines(self, *, quiet: bool) -> tuple[list[str], list[str]]:
        """Performance notes, one counted line per kind (``quiet``: one for all; the JSON report
        holds each), and snapshot notes, each once with the first test that showed it."""
        json, larger = self.settings.json is not None, larger_budget_for(self.tests)
        perf = self._ordered(self.perf_notes)
        counts = render_note_counts(perf, self.settings.commands, json, quiet=quiet, larger=larger)
        return counts, render_notes(self._ordered(self.notes))

    def unchecked_line(self) -> str | None:
        return render_unchecked(
            len(self.snapshots.kept),
            gate=self.settings.snapshot,
            update=self.settings.update,
            recorded=sum(1 for t in self.tests if t.workloads),
            commands=self.settings.commands,
        )

    def write_json(self, extend: Callable[[dict[str, Json]], None]) -> str | None:
        """Write the JSON report (``extend``, the update hook, may add fields to it first); why
        it was not written, or written without ``extend``'s changes."""
        path = self.settings.json
        try:
            return None if path is None else write_report(path, self.report(), extend)
        except FileWriteError as exc:
            return f"JSON report not written: {exc}"
