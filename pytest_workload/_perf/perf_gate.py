"""The performance gate: each timed top-level workload against its baseline on this device."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from .._core.errors import CorruptFileError, FileWriteError
from .._core.notes import GateResult, Note, NoteKind
from .._core.strict_json import canonical_json
from .._core.text import PLAIN, Commands, one_line
from .._fingerprint.distance import nearest
from .._workload.timing import MIN_SAMPLES, Timing
from .._workload.workload import TestWorkloads, Workload
from .baseline import Baseline
from .baseline_store import BaselineStore
from .device import device_identity
from .drift import judge, worth_retiming
from .perf_text import render_faster, render_missing_baseline, render_regression, render_too_few

_Notes = list[tuple[NoteKind, str]]

#: ``on`` gates timings (relaxed to notes when xdist workers share the machine, where nothing
#: is replayed for timing), ``strict`` replays and gates them even then, ``off`` leaves timings
#: to the report.
PerfMode = Literal["on", "off", "strict"]


class PerfGate:
    """Judges drift against stored baselines and, under ``update``, writes them."""

    def __init__(
        self,
        baselines: Path,
        *,
        mode: PerfMode = "on",
        update: bool = False,
        workers: int = 1,
        within: Path | None = None,
        commands: Commands = PLAIN,
    ) -> None:
        self.baselines = baselines
        self.within = within
        self.mode = mode
        self.update = update
        self.workers = workers
        self.commands = commands
        self._stores: dict[str, BaselineStore] = {}
        self._reported: set[str] = set()
        # the baselines this session wrote
        self._written: set[Path] = set()

    def check(self, test: TestWorkloads, tolerance: float) -> GateResult:
        failures: list[str] = []
        notes: _Notes = []
        regressions: list[str] = []
        for w in test.roots():
            # not replayed (xdist workers, an unmarked test): a few of the test's own calls
            unreplayed = w.measured is not None and w.measured.unreplayed
            if w.timing is not None and not unreplayed:
                failures += self._check_workload(w, tolerance, notes, regressions)
        kept = tuple(Note(test.nodeid, text, kind) for kind, text in notes)
        return GateResult(tuple(failures), kept, len(regressions))

    def has_baseline(self, workload_hash: str, device: str) -> bool:
        """Whether a stored baseline on ``device`` judges this workload (an unreadable store
        counts: timing the workload lets :meth:`check` say what is wrong with it)."""
        try:
            return self._store(device).get(workload_hash) is not None
        except CorruptFileError:
            return True

    def suspect(self, workload_hash: str, timing: Timing, tolerance: float) -> bool:
        """Whether a fresh timing looks slower than the tolerance against its baseline: the
        timing loop re-times it then (``TimingPolicy.suspect``), so a burst is outvoted and a
        real regression gets the samples that prove it. Not under update, where the timing
        cannot fail: re-timing would only cost time (relaxed for xdist, nothing is replayed)."""
        if self.update:
            return False
        try:
            baseline = self._store(timing.device).get(workload_hash)
        except CorruptFileError:
            return False  # reported by check()
        if baseline is None:
            return False
        return worth_retiming(judge(timing, baseline.timing, tolerance))

    def _store(self, device: str) -> BaselineStore:
        import torch

        if device not in self._stores:
            identity = device_identity(torch.device(device))
            self._stores[device] = BaselineStore(self.baselines, identity, self.within)
        return self._stores[device]

    @property
    def replays(self) -> bool:
        """Whether top-level workloads are replayed for timing: not where the gate is relaxed
        (xdist workers share the cores, the mode is not strict), whose timings are biased and
        could gate nothing; they are timed from the test's own calls there, and not judged."""
        return self._relaxed is None

    @property
    def _relaxed(self) -> str | None:
        """Why timings cannot gate here, if they cannot: workers compete for the cores."""
        if self.workers > 1 and self.mode != "strict":
            return (
                f"timed while {self.workers} xdist workers shared this machine, so "
                f"not failed and no baseline written; run the timing gate in one process "
                f"({self.commands.run}) or pass --workload-perf=strict"
            )
        return None

    def _check_workload(
        self, w: Workload, tolerance: float, notes: _Notes, regressions: list[str]
    ) -> list[str]:
        assert w.timing is not None
        store = self._store(w.timing.device)
        try:
            baseline = store.get(w.hash)
        except CorruptFileError as exc:
            if exc.future:
                return [
                    f"timing baseline {one_line(str(exc))}: upgrade pytest-workload to use it. "
                    "It is left as it is, also under --snapshot-update"
                ]
            if exc.old and not self.update:
                return [
                    f"timing baseline {one_line(str(exc))}; rewrite it with "
                    f"{self.commands.baseline}"
                ]
            if not self.update:
                return [
                    f"corrupt timing baseline {one_line(str(exc))}; fix it, delete it or rewrite "
                    f"it with {self.commands.baseline}"
                ]
            baseline = None
        if baseline is None:
            return self._no_baseline(w, store, notes)
        if store.path(w.hash) in self._written:
            return []  # a workload that several tests run: the session's first timing stands
        drift = judge(w.timing, baseline.timing, tolerance, (w.flops, baseline.flops))
        if drift.kind == "unchanged" or (drift.kind == "too few samples" and self.update):
            return []
        if drift.kind == "too few samples":
            notes.append(("not judged: too few samples", render_too_few(w, baseline.timing, drift)))
        elif self.update:
            note = (
                "timing baseline for "
                + one_line(f"{w.name} ({w.class_name}) {w.input_signature.format()}")
                + f" refreshed at {drift.ratio:.2f}x the old one"
            )
            return self._write(w, store, ("baseline refreshed", note), notes)
        elif drift.kind == "regression":
            device = store.device.describe()
            message = render_regression(w, baseline.timing, drift, device, self.commands)
            if self._relaxed is None:
                regressions.append(message)
                return [message]
            notes.append(("not judged: xdist", f"{message}\n  ({self._relaxed})"))
        else:
            notes.append(("faster", render_faster(w, baseline.timing, drift, self.commands)))
        return []

    def _write(
        self, w: Workload, store: BaselineStore, note: tuple[NoteKind, str], notes: _Notes
    ) -> list[str]:
        refused = self._refusal(w)
        if refused is not None:
            kind, why = refused
            notes.append((kind, f"{note[1]}: not written, {why}"))
            return []
        failures = self._put(w, store)
        if not failures:
            notes.append(note)
        return failures

    def _refusal(self, w: Workload) -> tuple[NoteKind, str] | None:
        """Why ``w``'s timing must not become its baseline, if it must not."""
        assert w.timing is not None
        if self._relaxed is not None:
            return "baseline not written: xdist", self._relaxed
        if not w.timing.has_interval:  # it could judge nothing
            return "baseline not written: too few samples", (
                f"timed on {w.timing.n} sample{'' if w.timing.n == 1 else 's'}, and a verdict "
                f"needs {MIN_SAMPLES}"
            )
        return None

    def _put(self, w: Workload, store: BaselineStore) -> list[str]:
        assert w.timing is not None
        try:
            store.put(Baseline.from_workload(w, store.device))
        except FileWriteError as exc:
            return [f"timing baseline not written: {one_line(str(exc))}"]
        self._written.add(store.path(w.hash))
        return []

    def _no_baseline(self, w: Workload, store: BaselineStore, notes: _Notes) -> list[str]:
        """Record a baseline under update; else a note, with the nearest compatible one."""
        if self.update:
            note = f"timing baseline {one_line(str(store.path(w.hash)))} recorded"
            return self._write(w, store, ("baseline recorded", note), notes)
        stored = store.all()
        for exc in store.unreadable:
            if exc.path not in self._reported:
                self._reported.add(exc.path)
                note = f"timing baseline {one_line(str(exc))}; left out of nearest-shape lookups"
                notes.append(("unreadable baseline", note))
        others = {canonical_json(b.key): b for b in stored if b.hash != w.hash}
        found = nearest(w.key, [b.key for b in others.values()])
        near = None if found is None else (others[canonical_json(found[0])], found[1])
        device = store.device.describe()
        notes.append(("no baseline", render_missing_baseline(w, device, near, self.commands)))
        return []
