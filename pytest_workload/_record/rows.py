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

from .._model.canonical import Json, canonical_json
from .identity import Identity

if TYPE_CHECKING:
    from torch import nn

    from .._measure.first_call import FirstCall
    from .._measure.replay import Measurement
    from .._model.computation import Computation

#: Calls of a root workload whose operations are traced: the first, and one more to tell a
#: forward whose operations depend on the data (later calls run untraced).
TRACED_CALLS = 2
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


@dataclass
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
    # its traced calls: how many, the first one's operations (or why none), and whether
    # another one ran different operations
    traced: int = 0
    computation: Computation | None = None
    compute_unknown: str | None = None
    data_dependent: bool = False

    def add_traced(self, done: Done) -> None:
        if done.building:  # (the next call is traced in its place)
            self.compute_unknown = "its traced call built a lazy module's parameters"
            return
        self.traced += 1
        if self.traced == 1:
            self.compute_unknown = None
            self.computation, self.compute_unknown = done.computation, done.compute_unknown
        elif _differ(self.computation, done.computation):
            self.data_dependent = True


def _differ(a: Computation | None, b: Computation | None) -> bool:
    return a is not None and b is not None and a.hash != b.hash


_EntryKey = tuple[int | None, str, str, int]


def _entry_key(caller: Entry | None, identity: Identity, depth: int) -> _EntryKey:
    row = None if caller is None else caller.row
    return (row, identity.structure_hash, identity.signature.canonical, depth)


def _clock_times(device: str) -> bool:
    """Whether a clock read around a call on ``device`` times its execution: on CUDA or MPS
    the call returns once its kernels are launched, long before they finish."""
    return device == "cpu"


class RowTable:
    """Rows in order of creation; ``timing`` says whether call durations are kept."""

    def __init__(self, *, timing: bool) -> None:
        self.timing = timing
        self._entries: dict[_EntryKey, Entry] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def entries(self) -> list[Entry]:
        """Every row, in order of creation."""
        return list(self._entries.values())

    def has_root(self, identity: Identity) -> bool:
        return _entry_key(None, identity, 0) in self._entries

    def root_traced(self, identity: Identity) -> int:
        """How many calls of a root workload were traced; -1 when it has no row yet."""
        entry = self._entries.get(_entry_key(None, identity, 0))
        return -1 if entry is None else entry.traced

    def take_first_calls(self) -> list[tuple[Entry, nn.Module, FirstCall]]:
        """The first call of each new top-level row, handed over once (the row keeps none)."""
        taken = []
        for entry in self._entries.values():
            first, entry.done.first = entry.done.first, None
            if first is not None and entry.caller is None:
                taken.append((entry, *first))
        return taken

    def add(self, caller: Entry | None, done: Done) -> None:
        """Count a completed call (and, under its row, the calls it made)."""
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
        entry.calls += 1
        entry.total_ns += done.elapsed_ns
        entry.untimed |= not _clock_times(done.identity.device)
        if done.traced:
            entry.add_traced(done)
        if self.timing and done.first is None:  # (a first call ran under FLOP counting)
            entry.samples_ns.append(done.elapsed_ns)
        if done.user_key is not None:
            seen = entry.user_keys.setdefault(
                canonical_json(done.user_key), [done.user_key, entry.calls, 0]
            )
            seen[2] += 1
        for child in done.children:
            self.add(entry, child)


def _depends_on_data(caller: Entry | None) -> None:
    """A call of known workloads ran a new one, or a known one at a new path: their
    operations depend on the data."""
    while caller is not None:
        caller.data_dependent = True
        caller = caller.caller
