"""The row table: completed calls aggregated into one row per workload and caller, and turned
into the stored ``Workload`` of each row, parents before children.

Rows are keyed by what a workload *is* (structure and inputs), not by its hash, so a scheme
whose hashes collapse cannot merge rows and hide the collapse, and by their calling row, so a
layer's children stay under that layer (docs/explanation/recording.md, "Submodules").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._compile.health import CompileHealth, Readiness, merge_health
from .._core.strict_json import Json, canonical_json
from .._fingerprint.ecosystem import library_versions
from .._perf import summarize
from .._workload.modules import ModuleTable, closure, top_packages
from .._workload.paths import name_first
from .._workload.timing import OBSERVED, OFF, Measured, not_measured, observed
from .._workload.workload import TestWorkloads, UserKey, Workload
from .identity import Identity
from .states import Event, Life, State, advance

if TYPE_CHECKING:
    from torch import nn

    from .._perf import FirstCall
    from .._workload.computation import Computation

UNTRACED = "first run in a call that was not traced (its caller's operations depend on the data)"


@dataclass(slots=True, eq=False)
class Call:
    """One recorded module call: a frame of the call stack while it runs; once it returned
    (``done``), what it was, with the completed calls it made, filed into the row table."""

    module: nn.Module
    target: nn.Module
    name: str
    depth: int
    record: bool
    order: int
    # its args and kwargs described, and their process-local key (None: not recorded)
    inputs: tuple[tuple[tuple[Json, ...], tuple[tuple[str, Json], ...]], str] | None = None
    start_ns: int = 0
    elapsed_ns: int = 0
    # the exception being handled where the call began (another one as it ends: it raised)
    ambient: BaseException | None = None
    # a root's identity when its inputs were seen before, looked up once as the call opens,
    # valid while the identity cache's generation stays the same
    identity: Identity | None = None
    generation: int = 0
    # a root's row when its workload has one already, looked up as the call opens
    entry: Entry | None = None
    # a settled root's call: its submodules run unhooked (see states.OBSERVED_CALLS)
    settled: bool = False
    # a new root's first call; once done, kept only for a new top-level workload
    first: FirstCall | None = None
    # whether this call's operations go into a span of its own (its root is traced)
    span: bool = False
    done: bool = False
    children: list[Call] = field(default_factory=list)
    location: str | None = None
    user_key: Json = None
    # whether its operations were traced, what they were, and (None there) why not
    traced: bool = False
    computation: Computation | None = None
    compute_unknown: str | None = None
    # the call built parameters of a lazy module: its operations include the building
    building: bool = False
    # what dynamo compiled in a root call of a compiled module (None: not observed)
    compile_health: CompileHealth | None = None


@dataclass(eq=False)
class Entry:
    """One row: a workload under one calling row, with its calls summed."""

    done: Call
    identity: Identity
    # the calling row; rows are numbered in order of creation
    caller: Entry | None
    row: int
    # every path that ran it, in order of first call (a root keeps its call site's name)
    paths: dict[str, None]
    calls: int = 0
    total_ns: int = 0
    # a call the clock around it could not time (one that ran off the CPU)
    untimed: bool = False
    # canonical user key -> [key, first call number, calls]
    user_keys: dict[str, list[Any]] = field(default_factory=dict)
    samples_ns: list[int] = field(default_factory=list)
    # its traced calls' first one's operations (or why none)
    computation: Computation | None = None
    compute_unknown: str | None = None
    # a root's submodule rows with how often its last observed call ran each
    per_call: dict[Entry, int] = field(default_factory=dict)
    # calls counted from a settled root's, not observed (so not timed)
    counted: int = 0
    compile_health: CompileHealth | None = None
    life: Life = field(default_factory=Life)

    def add_traced(self, done: Call) -> None:
        if done.building:  # (the next call is traced in its place)
            self.compute_unknown = "its traced call built a lazy module's parameters"
            return
        first = not self.life.traced
        a, b = self.computation, done.computation
        differs = not first and a is not None and b is not None and a.hash != b.hash
        self.life = advance(self.life, Event.TRACED_OTHER if differs else Event.TRACED)
        if first:
            self.computation, self.compute_unknown = done.computation, done.compute_unknown


_EntryKey = tuple[int | None, str, str, int]


def _entry_key(caller: Entry | None, identity: Identity, depth: int) -> _EntryKey:
    row = None if caller is None else caller.row
    return (row, identity.structure_hash, identity.signature.canonical, depth)


class RowTable:
    """Rows in order of creation; ``timing`` says whether call durations are kept."""

    def __init__(self, *, timing: bool) -> None:
        self.timing = timing
        self._entries: dict[_EntryKey, Entry] = {}
        # root rows by the identity object last seen for them (it is kept, so its id stands)
        self._roots: dict[int, tuple[Identity, Entry]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def root(self, identity: Identity) -> Entry | None:
        """A root workload's row, if it has one (looked up by the identity object first: a
        repeated call's path)."""
        cached = self._roots.get(id(identity))
        if cached is not None and cached[0] is identity:
            return cached[1]
        entry = self._entries.get(_entry_key(None, identity, 0))
        if entry is not None:
            self._roots[id(identity)] = (identity, entry)
        return entry

    def take_first_calls(self) -> list[tuple[Entry, FirstCall]]:
        """The first call of each new top-level row, handed over once (the row keeps none)."""
        taken = []
        for entry in self._entries.values():
            first, entry.done.first = entry.done.first, None
            if first is not None and entry.caller is None:
                taken.append((entry, first))
        return taken

    def add(self, caller: Entry | None, done: Call, tally: dict[Entry, int] | None = None) -> None:
        """Count a completed call (and, under its row, the calls it made); ``tally`` counts
        the rows' calls of one observed root call."""
        identity = done.identity
        assert identity is not None  # (a call is done once its identity is read)
        key = _entry_key(caller, identity, done.depth)
        entry = self._entries.get(key)
        if entry is None:
            row = len(self._entries)
            entry = self._entries[key] = Entry(done, identity, caller, row, {done.name: None})
            if not done.traced:
                entry.compute_unknown = UNTRACED
                _depends_on_data(caller)
        elif done.depth and done.name not in entry.paths:
            entry.paths[done.name] = None
            if not done.traced:
                _depends_on_data(caller)
        if done.traced:
            entry.add_traced(done)
        if tally is not None:
            tally[entry] = tally.get(entry, 0) + 1
        # (a traced call ran under the tracer, and a first call copied its inputs first)
        sample = done.first is None and not done.traced
        self.count(entry, done, sample, tally)

    def count(
        self, entry: Entry, call: Call, sample: bool = True, tally: dict[Entry, int] | None = None
    ) -> None:
        """Count ``call`` into ``entry``'s row (and, under it, the calls it made); ``sample``:
        its time is a timing sample."""
        assert call.identity is not None  # (read before a call is counted)
        entry.calls += 1
        entry.total_ns += call.elapsed_ns
        if call.compile_health is not None:  # (observed calls of a compiled root only)
            entry.compile_health = merge_health(entry.compile_health, call.compile_health)
        entry.untimed |= not call.identity.clocked
        if self.timing and sample:
            entry.samples_ns.append(call.elapsed_ns)
        key = call.user_key
        if key is not None:
            seen = entry.user_keys.setdefault(canonical_json(key), [key, entry.calls, 0])
            seen[2] += 1
        for child in call.children:
            self.add(entry, child, tally)

    def observe(self, entry: Entry, call: Call) -> None:
        """Count an untraced call of a known root, its submodules' calls recorded."""
        tally: dict[Entry, int] = {}
        self.count(entry, call, tally=tally)
        same = tally == entry.per_call
        entry.life = advance(entry.life, Event.OBSERVED_SAME if same else Event.OBSERVED_OTHER)
        entry.per_call = tally

    def count_settled(self, call: Call) -> None:
        """Count a settled root's call, its submodules unhooked: their rows get the calls its
        observed ones made (a call of the root within it is not counted)."""
        entry = call.entry
        assert entry is not None  # (a settled call has its row)
        call.children.clear()
        self.count(entry, call)
        for sub, calls in entry.per_call.items():
            sub.calls += calls
            sub.counted += calls

    def to_workloads(
        self,
        nodeid: str,
        descriptions: ModuleTable,
        measurements: Mapping[int, Measured],
        readiness: Mapping[int, Readiness],
    ) -> TestWorkloads:
        """The rows in order of first call, with the descriptions of their trees (taken from
        ``descriptions``, every module description the test read), and the measurements and
        compile readiness of the new top-level rows measured after the test, by row."""
        entries = sorted(self._entries.values(), key=lambda e: e.done.order)
        position = {e.row: i for i, e in enumerate(entries)}
        modules = closure(descriptions, (e.identity.structure_hash for e in entries))
        return TestWorkloads(
            nodeid,
            tuple(
                _workload(e, position, self.timing, measurements.get(e.row), readiness.get(e.row))
                for e in entries
            ),
            modules=modules,
            libraries=library_versions(top_packages(modules)) if entries else {},
        )


def _depends_on_data(caller: Entry | None) -> None:
    """A call of known workloads ran a new one, or a known one at a new path: their
    operations depend on the data."""
    while caller is not None:
        caller.life = advance(caller.life, Event.NEW_BELOW)
        caller = caller.caller


def _measured(entry: Entry, timing: bool, measurement: Measured | None) -> Measured | None:
    """How a row's numbers were obtained, and its timing: a root's are its measurement (None
    before it, or for a failed test), a submodule's its observed calls'."""
    if entry.caller is None:
        return measurement
    timed = None
    if not timing:
        how = OFF
    elif entry.untimed:
        how = not_measured("it ran off the CPU, where a clock around a call does not time it")
    elif not entry.samples_ns:
        how = not_measured("its calls were traced (which slows them): a later call times it")
    else:
        samples = [ns / 1e9 for ns in entry.samples_ns]
        timed = summarize(samples, entry.identity.device, "recorded calls")
        how = OBSERVED
        if entry.counted:
            how = observed(
                f"{len(samples)} of {entry.calls}: the later calls of a settled root run its "
                "submodules unhooked"
            )
    return Measured(how, not_measured("FLOPs are counted for top-level workloads"), timed=timed)


def _workload(
    entry: Entry,
    position: dict[int, int],
    timing: bool,
    measurement: Measured | None,
    readiness: Readiness | None,
) -> Workload:
    done, identity, caller = entry.done, entry.identity, entry.caller
    measured = _measured(entry, timing, measurement)
    computation = entry.computation
    unknown = entry.compute_unknown or "its operations were not traced"
    return Workload(
        name=done.name,
        class_name=identity.class_name,
        depth=done.depth,
        parent=None if caller is None else caller.identity.hash,
        structure_hash=identity.structure_hash,
        structure_hash_without_dtypes=identity.structure_hash_without_dtypes,
        input_signature=identity.signature,
        hash=identity.hash,
        calls=entry.calls,
        params=identity.params,
        arg_names=identity.arg_names,
        location=done.location,
        # (calls counted from a settled root's were not timed: no total)
        total_time_s=None if not timing or entry.untimed or entry.counted else entry.total_ns / 1e9,
        submodules=identity.submodules,
        user_keys=tuple(UserKey(k, first, n) for k, first, n in entry.user_keys.values()),
        timing=None if measured is None else measured.timed,
        flops=None if measured is None else measured.counted,
        peak_memory_bytes=None if measured is None else measured.peak_memory_bytes,
        output_signature=identity.output,
        caller=None if caller is None else position[caller.row],
        # (the workload keeps each number once: its measurement keeps only how it was taken)
        measured=None if measured is None else Measured(measured.timing, measured.flops),
        compute_hash=None if computation is None else computation.hash,
        data_dependent=entry.life.state is State.DATA_DEPENDENT,
        compute_unknown=None if computation is not None else unknown,
        compute_partial=None if computation is None else computation.coverage(),
        computation=computation,
        costs=None if computation is None else computation.costs,
        paths=name_first(done.name, entry.paths),
        compile_health=entry.compile_health,
        compile_readiness=readiness,
    )
