"""A workload's computation: the torch-level operations one call ran, in order.

Each operation is one line of text, ``name(arguments)``: tensors by dtype and shape, every
other argument by value (``gelu(float32[1, 8])``, ``cat([float32[1, 4], float32[1, 4]], dim=1)``).
The call of a recorded submodule is a :class:`SubCall` holding that submodule's own
computation, so each distinct computation is stored once and a parent refers to its
children's. The ``compute_hash`` is taken over the flat list (the parent's operations with its
children's in place), so it does not depend on how deep submodules were recorded.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property

from .canonical import Json, canonical_json, sha256_hex
from .errors import WorkloadDataError

#: Enters every compute hash, so a change of the operation text's grammar is a new version.
COMPUTE_VERSION = 1
#: Nesting of stored computations a reader follows (a cycle or a forged chain stops there).
_MAX_NESTING = 200


@dataclass(frozen=True)
class SubCall:
    """A recorded submodule's call, by its path, inside its caller's computation."""

    name: str
    computation: Computation


@dataclass(frozen=True)
class Computation:
    """The operations of one call; ``items`` are operation texts and submodule calls."""

    items: tuple[str | SubCall, ...]

    @cached_property
    def flat(self) -> tuple[str, ...]:
        """Every operation, the submodules' in place."""
        return tuple(self._flatten())

    def _flatten(self) -> Iterator[str]:
        for item in self.items:
            if isinstance(item, str):
                yield item
            else:
                yield from item.computation.flat

    @cached_property
    def hash(self) -> str:
        """The compute hash: SHA-256 of the flat operation list's canonical JSON."""
        return sha256_hex(canonical_json(["compute", COMPUTE_VERSION, list(self.flat)]))

    def stored_items(self) -> list[Json]:
        """The items as stored: texts, and ``{"call": path, "compute": hash}`` references."""
        return [
            item if isinstance(item, str) else {"call": item.name, "compute": item.computation.hash}
            for item in self.items
        ]

    def closure(self) -> Iterator[Computation]:
        """This computation and every one it refers to (repeats included)."""
        yield self
        for item in self.items:
            if isinstance(item, SubCall):
                yield from item.computation.closure()


def computation_table(computations: list[Computation]) -> dict[str, list[Json]]:
    """Each distinct computation reachable from ``computations``, once, by its hash."""
    table: dict[str, list[Json]] = {}
    for root in computations:
        for c in root.closure():
            if c.hash not in table:
                table[c.hash] = c.stored_items()
    return dict(sorted(table.items()))


def read_computations(data: object) -> dict[str, Computation]:
    """A stored table back as computations; every key must be its computation's hash."""
    if not isinstance(data, dict):
        raise WorkloadDataError("field 'computations' must be an object")
    built: dict[str, Computation] = {}
    for key in data:
        _build(key, data, built, ())
    return built


def _build(
    key: str, data: Mapping[str, object], built: dict[str, Computation], path: tuple[str, ...]
) -> Computation:
    if key in built:
        return built[key]
    where = f"computation {key[:16]!r}"
    if key in path or len(path) > _MAX_NESTING:
        raise WorkloadDataError(f"{where} refers to itself")
    items = data.get(key)
    if not isinstance(items, list):
        raise WorkloadDataError(f"{where} is referred to but missing, or not a list")
    out: list[str | SubCall] = []
    for item in items:
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict) and set(item) == {"call", "compute"}:
            name, ref = item["call"], item["compute"]
            if not isinstance(name, str) or not isinstance(ref, str):
                raise WorkloadDataError(f"{where}: a call needs a string 'call' and 'compute'")
            out.append(SubCall(name, _build(ref, data, built, (*path, key))))
        else:
            raise WorkloadDataError(f"{where}: an item must be a string or a call reference")
    computation = Computation(tuple(out))
    if computation.hash != key:
        raise WorkloadDataError(f"{where} does not hash to its key (edited by hand?)")
    built[key] = computation
    return computation
