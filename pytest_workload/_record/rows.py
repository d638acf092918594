"""The row table: completed calls aggregated into one row per workload and caller.

Rows are keyed by what a workload *is* (structure and inputs), not by its hash, so a scheme
whose hashes collapse cannot merge rows and hide the collapse. Roots are named by their first
call site; submodules keep their path, so three identical layers stay three rows, and their
calling row, so a layer's children stay under that layer.
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


@dataclass
class Entry:
    """One row: a workload under one calling row, with its calls summed."""

    done: Done
    # the calling row; rows are numbered in order of creation
    caller: Entry | None
    row: int
    calls: int = 0
    total_ns: int = 0
    # a call the clock around it could not time (one that ran off the CPU)
    untimed: bool = False
    # canonical user key -> [key, first call number, calls]
    user_keys: dict[str, list[Any]] = field(default_factory=dict)
    samples_ns: list[int] = field(default_factory=list)
    measurement: Measurement | None = None


_EntryKey = tuple[int | None, str, str, int, str]


def _entry_key(caller: Entry | None, identity: Identity, depth: int, name: str) -> _EntryKey:
    row = None if caller is None else caller.row
    return (row, identity.structure_hash, identity.fast_key, depth, name if depth else "")


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
        return _entry_key(None, identity, 0, "") in self._entries

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
        key = _entry_key(caller, done.identity, done.depth, done.name)
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = Entry(done, caller, len(self._entries))
        entry.calls += 1
        entry.total_ns += done.elapsed_ns
        entry.untimed |= not _clock_times(done.identity.device)
        if self.timing and done.first is None:  # (a first call ran under FLOP counting)
            entry.samples_ns.append(done.elapsed_ns)
        if done.user_key is not None:
            seen = entry.user_keys.setdefault(
                canonical_json(done.user_key), [done.user_key, entry.calls, 0]
            )
            seen[2] += 1
        for child in done.children:
            self.add(entry, child)
