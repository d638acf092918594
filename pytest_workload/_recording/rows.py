"""The row table: completed calls aggregated into one row per workload and caller.

Rows are keyed by what a workload *is* (structure and inputs), not by its hash, so a scheme
whose hashes collapse cannot merge rows and hide the collapse, and by their calling row, so a
layer's children stay under that layer. Roots are named by their first call site; a
submodule row keeps every path that ran it, so three identical layers are one row with three
paths, and their children one row under it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._core.strict_json import Json, canonical_json
from .identity import Identity

# (the counts, named where the recorder's tests read them)
from .states import OBSERVED_CALLS as OBSERVED_CALLS
from .states import TRACED_CALLS as TRACED_CALLS
from .states import Event, Life, advance

if TYPE_CHECKING:
    from torch import nn

    from .._perf import FirstCall, Measurement
    from .._workload.computation import Computation

UNTRACED = "first run in a call that was not traced (its caller's operations depend on the data)"


@dataclass
class Done:
    """One completed call, with the completed calls it made."""

    identity: Identity
    name: str
    location: str | None
    depth: int
    elapsed_ns: int
    order: int
    children: list[Done]
    user_key: Json = None
    # the module as called and its first call, kept when this is a new top-level workload
    first: tuple[nn.Module, FirstCall] | None = None
    # whether its operations were traced, what they were, and (None there) why not
    traced: bool = False
    computation: Computation | None = None
    compute_unknown: str | None = None
    # the call built parameters of a lazy module: its operations include the building
    building: bool = False


@dataclass(eq=False)
class Entry:
    """One row: a workload under one calling row, with its calls summed."""

    done: Done
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
    measurement: Measurement | None = None
    # its traced calls' first one's operations (or why none)
    computation: Computation | None = None
    compute_unknown: str | None = None
    # a root's submodule rows with how often its last observed call ran each
    per_call: dict[Entry, int] = field(default_factory=dict)
    # calls counted from a settled root's, not observed (so not timed)
    counted: int = 0
    life: Life = field(default_factory=Life)

    def add_traced(self, done: Done) -> None:
        if done.building:  # (the next call is traced in its place)
            self.compute_unknown = "its traced call built a lazy module's parameters"
            return
        first = not self.life.traced
        differs = not first and _differ(self.computation, done.computation)
        self.life = advance(self.life, Event.TRACED_OTHER if differs else Event.TRACED)
        if first:
            self.computation, self.compute_unknown = done.computation, done.compute_unknown


def _differ(a: Computation | None, b: Computation | None) -> bool:
    return a is not None and b is not None and a.hash != b.hash


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

    def entries(self) -> list[Entry]:
        """Every row, in order of creation."""
        return list(self._entries.values())

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

    def take_first_calls(self) -> list[tuple[Entry, nn.Module, FirstCall]]:
        """The first call of each new top-level row, handed over once (the row keeps none)."""
        taken = []
        for entry in self._entries.values():
            first, entry.done.first = entry.done.first, None
            if first is not None and entry.caller is None:
                taken.append((entry, *first))
        return taken

    def add(self, caller: Entry | None, done: Done, tally: dict[Entry, int] | None = None) -> None:
        """Count a completed call (and, under its row, the calls it made); ``tally`` counts
        the rows' calls of one observed root call."""
        key = _entry_key(caller, done.identity, done.depth)
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = Entry(done, caller, len(self._entries), {done.name: None})
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
        self.count(
            entry, done.identity, done.elapsed_ns, done.user_key, done.children, sample, tally
        )

    def count(
        self,
        entry: Entry,
        identity: Identity,
        elapsed_ns: int,
        user_key: Json,
        children: list[Done],
        sample: bool = True,
        tally: dict[Entry, int] | None = None,
    ) -> None:
        """Count a call of ``entry``'s workload as ``identity`` (and, under its row, the calls
        it made); ``sample``: its time is a timing sample."""
        entry.calls += 1
        entry.total_ns += elapsed_ns
        entry.untimed |= not identity.clocked
        if self.timing and sample:
            entry.samples_ns.append(elapsed_ns)
        if user_key is not None:
            seen = entry.user_keys.setdefault(canonical_json(user_key), [user_key, entry.calls, 0])
            seen[2] += 1
        for child in children:
            self.add(entry, child, tally)

    def observe(
        self,
        entry: Entry,
        identity: Identity,
        elapsed_ns: int,
        user_key: Json,
        children: list[Done],
    ) -> None:
        """Count an untraced call of a known root, its submodules' calls recorded."""
        tally: dict[Entry, int] = {}
        self.count(entry, identity, elapsed_ns, user_key, children, tally=tally)
        same = tally == entry.per_call
        entry.life = advance(entry.life, Event.OBSERVED_SAME if same else Event.OBSERVED_OTHER)
        entry.per_call = tally

    def count_settled(self, entry: Entry, identity: Identity, elapsed_ns: int) -> None:
        """Count a settled root's call, its submodules unhooked: their rows get the calls its
        observed ones made."""
        self.count(entry, identity, elapsed_ns, None, [])
        for sub, calls in entry.per_call.items():
            sub.calls += calls
            sub.counted += calls


def _depends_on_data(caller: Entry | None) -> None:
    """A call of known workloads ran a new one, or a known one at a new path: their
    operations depend on the data."""
    while caller is not None:
        caller.life = advance(caller.life, Event.NEW_BELOW)
        caller = caller.caller
