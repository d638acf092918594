"""The performance gate: each timed top-level workload against its baseline on this device,
and its texts (regressions, faster workloads, missing baselines, too few samples)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from .._core.errors import CorruptFileError, FileWriteError
from .._core.files import held, restore
from .._core.notes import GateResult, Note, NoteKind
from .._core.strict_json import canonical_json
from .._core.text import PLAIN, Commands, format_duration, one_line, plural, short
from .._fingerprint.distance import nearest
from .._workload.timing import MIN_SAMPLES, Timing
from .._workload.workload import TestWorkloads, Workload
from .baseline import Baseline, BaselineStore, Drift, judge, worth_retiming
from .device import device_for
from .stopwatch import LIMIT_BUDGETS, TimingPolicy

#: What the check of one workload found: a note, or a failure (a regression, or another).
_Found = list[tuple[NoteKind | Literal["failure", "regression"], str]]

#: ``--workload-perf``'s values (their meaning: its help in ``_options.py``).
PerfMode = Literal["on", "off", "strict"]


def _title(w: Workload) -> str:
    title = one_line(f"{w.label} ({w.class_name}), input {w.input_signature.format()}")
    return f"{title}, hash {short(w.hash)}"


def _decided(current: Timing, drift: Drift) -> str:
    how = (
        "compute relative to the calibration kernel timed beside it, waits in seconds"
        if drift.evidence == "calibrated"
        else "no calibration to compare"
    )
    text = f"{drift.figure()}, tolerance {drift.tolerance:.0%}: {how}"
    if current.retimed:
        times = {1: "once", 2: "twice"}.get(current.retimed, f"{current.retimed} times")
        text += f"; re-timed {times}, judged on every timing's samples"
    return text


def _wall(current: Timing, baseline: Timing, drift: Drift) -> str:
    label = "wall time, context only" if drift.evidence == "calibrated" else "wall time"
    text = (
        f"{label}: median {format_duration(current.median_s)} vs baseline "
        f"{format_duration(baseline.median_s)} ({drift.wall_ratio:.2f}x)"
    )
    if drift.machine_ratio is not None:
        text += f", the calibration kernel {drift.machine_ratio:.2f}x its baseline's time"
    return text


def _interval(t: Timing) -> str:  # (a regression's timings have one: judge() says so)
    return f"95% CI {format_duration(t.ci_s[0])}–{format_duration(t.ci_s[1])} (n={t.n})"


def cut_short(t: Timing) -> bool:
    """Whether the time budget cut a replay short, on fewer samples than a verdict needs."""
    return t.source == "replay" and not t.has_interval


def larger_budget(t: Timing) -> float:
    """A ``--workload-time-budget`` (two significant digits, rounded up, the default at least)
    with room for the samples a verdict needs, and the warm-up, twice over, where a replay
    like ``t`` was cut short: a sample takes a call and its calibration block, and a timing
    stops at ``LIMIT_BUDGETS`` budgets."""
    sample_s = t.median_s * (1 + TimingPolicy.reference_share)
    needed = 2 * (MIN_SAMPLES + 2) * sample_s / LIMIT_BUDGETS
    needed = max(needed, TimingPolicy.budget_s)
    step = 10.0 ** (math.floor(math.log10(needed)) - 1)
    return float(f"{math.ceil(round(needed / step, 6)) * step:.2g}")


def larger_budget_for(tests: Iterable[TestWorkloads]) -> float | None:
    """The :func:`larger_budget` of every timing of ``tests`` cut short (None: none was)."""
    timings = (w.timing for t in tests for w in t.roots() if w.timing is not None)
    return max((larger_budget(t) for t in timings if cut_short(t)), default=None)


def _put_back(path: Path, before: bytes | None, root: Path | None) -> str:
    shown = one_line(str(path.relative_to(root) if root and path.is_relative_to(root) else path))
    try:
        restore(path, before)
    except FileWriteError as exc:
        return f"timing baseline {shown} could not be put back: {one_line(exc.reason)}"
    done = "not written" if before is None else "kept as it was"
    return f"timing baseline {shown} {done}: the test erred in teardown"


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
        self.update = update
        self.commands = commands
        #: Whether a timing the gate cannot judge fails its test.
        self._strict = mode == "strict"
        #: Why timings cannot gate here, if they cannot: workers compete for the cores.
        self._relaxed: str | None = None
        if workers > 1 and mode != "strict":
            self._relaxed = (
                f"timed while {workers} xdist workers shared this machine, so "
                f"not failed and no baseline written; run the timing gate in one process "
                f"({commands.run}) or pass --workload-perf=strict"
            )
        self._stores: dict[str, BaselineStore] = {}
        self._reported: set[str] = set()
        # the baselines this session wrote
        self._written: set[Path] = set()
        # what each test's update wrote over (None: nothing), until its teardown is over
        self._wrote: dict[str, list[tuple[Path, bytes | None]]] = {}

    def check(self, test: TestWorkloads, tolerance: float) -> GateResult:
        failures: list[str] = []
        notes: list[Note] = []
        regressions = 0
        for w in test.roots():
            if w.timing is None or (w.measured is not None and w.measured.unreplayed):
                continue
            for kind, text in self._check_workload(test.nodeid, w, tolerance):
                if kind == "failure" or kind == "regression":
                    failures.append(text)
                    regressions += kind == "regression"
                else:
                    notes.append(Note(test.nodeid, text, kind, w.hash))
        return GateResult(tuple(failures), tuple(notes), regressions)

    def torn_down(self, nodeid: str, *, failed: bool) -> tuple[Note, ...]:
        """A test's teardown is over: forget the baselines its update wrote or, when it
        failed, put back what they held, and say so."""
        wrote = self._wrote.pop(nodeid, [])
        if not failed:
            return ()
        self._written.difference_update(path for path, _ in wrote)  # (a rerun times it again)
        return tuple(Note(nodeid, _put_back(p, b, self.within)) for p, b in reversed(wrote))

    def has_baseline(self, workload_hash: str, device: str) -> bool:
        """Whether some test's baseline on ``device`` may judge this workload (the session
        budget times it whichever test runs it)."""
        return self._store(device).has_any(workload_hash)

    def suspect(self, test: str, workload_hash: str, timing: Timing, tolerance: float) -> bool:
        """``TimingPolicy.suspect``: not under update, where the timing cannot fail."""
        if self.update:
            return False
        try:
            baseline = self._store(timing.device).get(workload_hash, test)
        except CorruptFileError:
            return False  # reported by check()
        return baseline is not None and worth_retiming(judge(timing, baseline.timing, tolerance))

    def _store(self, device: str) -> BaselineStore:
        if device not in self._stores:
            identity = device_for(device).identity()
            self._stores[device] = BaselineStore(self.baselines, identity, self.within)
        return self._stores[device]

    @property
    def replays(self) -> bool:
        """Whether top-level workloads are replayed for timing: not where xdist workers share
        the cores (and the mode is not strict), whose timings could gate nothing."""
        return self._relaxed is None

    def _check_workload(self, test: str, w: Workload, tolerance: float) -> _Found:
        assert w.timing is not None
        store = self._store(w.timing.device)
        try:
            baseline = store.get(w.hash, test)
        except CorruptFileError as exc:
            what, rewrite = one_line(str(exc)), f"rewrite it with {self.commands.baseline}"
            if exc.future:
                text = (
                    f"timing baseline {what}: upgrade pytest-workload to use it. "
                    "It is left as it is, also under --snapshot-update"
                )
            elif exc.old:
                text = f"timing baseline {what}; {rewrite}"
            else:
                text = f"corrupt timing baseline {what}; fix it, delete it or {rewrite}"
            if exc.future or not self.update:
                return [("failure", text)]
            baseline = None
        other = None if baseline is None else baseline.other_computation(w)
        if baseline is None or other is not None:
            return self._no_baseline(test, w, store, other)
        if store.path(w.hash, test) in self._written:
            return []  # a test run twice (--count, a rerun plugin): its first timing stands
        drift = judge(w.timing, baseline.timing, tolerance)
        if self.update:
            # every timing measured, drifted or not: the next run on this machine then judges
            # against what this one timed, and passes (a noisy timing kept as "no drift" failed it)
            note = (
                "timing baseline for "
                + one_line(f"{w.name} ({w.class_name}) {w.input_signature.format()}")
                + f" refreshed: {drift.figure()} against the old one"
            )
            return self._write(test, w, store, ("baseline refreshed", note))
        kind: NoteKind
        if drift.kind == "unchanged":
            return []
        if drift.kind == "regression":
            message = "\n".join(
                [
                    f"performance regression: {_title(w)}",
                    f"  slower: {_decided(w.timing, drift)}",
                    f"  {_wall(w.timing, baseline.timing, drift)}",
                    f"  current {_interval(w.timing)}, baseline {_interval(baseline.timing)}",
                    f"  on {store.device.describe()}; accept the new timing with "
                    f"{self.commands.baseline}",
                ]
            )
            if self._relaxed is None:
                return [("regression", message)]
            return [("not judged: xdist", f"{message}\n  ({self._relaxed})")]
        if drift.kind == "faster":
            text = (
                f"{_title(w)} is faster than its baseline: {_decided(w.timing, drift)} "
                f"({_wall(w.timing, baseline.timing, drift)}); refresh the baseline with "
                f"{self.commands.baseline}"
            )
            return [("faster", text)]
        if drift.kind == "too few samples":
            why = " (the time budget cut it short: see --workload-time-budget)"
            kind = "not judged: too few samples"
            text = (
                f"{_title(w)}: {drift.figure()}, not judged: timed on "
                f"{plural(w.timing.n, 'sample')}{why if cut_short(w.timing) else ''} against "
                f"the baseline's {baseline.timing.n}, and a verdict needs {MIN_SAMPLES} on "
                "each side"
            )
        else:
            kind = "not judged: kernel"
            text = (
                f"{_title(w)}: {drift.figure()} (wall time, context only, "
                f"{drift.wall_ratio:.2f}x), not judged: the calibration kernel took "
                f"{drift.machine_ratio:.2f}x its baseline's time, beyond any load or phase of "
                f"one machine; refresh the baseline with {self.commands.baseline}"
            )
        if self._strict:
            return [("failure", f"{text}; --workload-perf=strict fails a timing it cannot judge")]
        return [(kind, text)]

    def _write(
        self, test: str, w: Workload, store: BaselineStore, note: tuple[NoteKind, str]
    ) -> _Found:
        assert w.timing is not None
        refused = f"{note[1]}: not written, timed on {plural(w.timing.n, 'sample')}"
        if self._relaxed is not None:
            return [("baseline not written: xdist", f"{note[1]}: not written, {self._relaxed}")]
        if cut_short(w.timing):
            larger = self.commands.raise_budget(larger_budget(w.timing))
            why = f"cut short by the time budget; write it with a larger one: {larger}"
            return [("baseline not written: cut short", f"{refused}, {why}")]
        if not w.timing.has_interval:  # it could judge nothing
            why = f"{refused}, and a verdict needs {MIN_SAMPLES}"
            return [("baseline not written: too few samples", why)]
        before = held(store.path(w.hash, test))
        try:
            path = store.put(Baseline.from_workload(test, w, store.device))
        except FileWriteError as exc:
            return [("failure", f"timing baseline not written: {one_line(str(exc))}")]
        self._written.add(path)
        if before is not None:
            self._wrote.setdefault(test, []).append((path, before[0]))
        return [note]

    def _no_baseline(
        self, test: str, w: Workload, store: BaselineStore, other: str | None
    ) -> _Found:
        if self.update:
            note = f"timing baseline {one_line(str(store.path(w.hash, test)))} recorded"
            return self._write(test, w, store, ("baseline recorded", note))
        stored = store.all()  # (lists the files it could not read)
        unread: _Found = []
        for exc in store.unreadable:
            if exc.path not in self._reported:
                self._reported.add(exc.path)
                note = f"timing baseline {one_line(str(exc))}; left out of nearest-shape lookups"
                unread.append(("unreadable baseline", note))
        assert w.timing is not None
        # the same text in every test that runs the workload (whatever a test calls its model),
        # so the session shows it once
        workload = one_line(f"{w.class_name}, input {w.input_signature.format()}")
        line = (
            f"no timing baseline for {workload}, hash {short(w.hash)} on {store.device.describe()}"
        )
        others = {canonical_json(b.key): b for b in stored if b.hash != w.hash}
        if other is not None:
            line += f" (this test's baseline timed another computation: {other})"
        elif (found := nearest(w.key, [b.key for b in others.values()])) is not None:
            near, factor = others[canonical_json(found[0])], found[1]
            line += (
                f"; nearest compatible baseline: {one_line(f'{near.name} {near.input}')} "
                f"({format_duration(near.timing.median_s)}) at distance factor {factor:g}, so "
                f"about {format_duration(near.timing.median_s * factor)} expected if time scales "
                "with size"
            )
        kind: NoteKind = "no baseline"
        record = f"record one with {self.commands.baseline}"
        if cut_short(w.timing):
            kind = "no baseline: cut short"
            record = (
                f"timed on {plural(w.timing.n, 'sample')}, cut short by the time budget: record "
                f"one with a larger one: {self.commands.raise_budget(larger_budget(w.timing))}"
            )
        return [*unread, (kind, f"{line}; {record}")]
