"""A workload's computation: the torch-level operations one call ran, in order, one line of
text each, and a recorded submodule's call as a :class:`SubCall` holding its own (the grammar,
where a list stops, and why the hash is over the flat list: docs/explanation/hashes.md, "Compute
hash"; why calls are stored apart: docs/reference/snapshot-files.md)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property

from .._core.errors import WorkloadDataError
from .._core.strict_json import Json, canonical_json, sha256_hex
from .costs import Costs

#: Enters every compute hash, so a change of the operation text's grammar is a new version.
COMPUTE_VERSION = 1
#: Ends the text of the operation a call's list stops at.
FOLLOWS_DATA = " -> follows the data"
#: Nesting of stored computations a reader follows (a cycle or a forged chain stops there).
_MAX_NESTING = 200
_REFERENCE = re.compile(r"@(\^*[\w.%~-]*)")


def relative_path(base: str, path: str) -> str:
    """``path`` (from the root, ``.``-separated) as seen from ``base``: ``^`` per step up."""
    b, p = base.split(".") if base else [], path.split(".") if path else []
    common = 0
    while common < min(len(b), len(p)) and b[common] == p[common]:
        common += 1
    return "^" * (len(b) - common) + ".".join(p[common:])


def _steps(path: str) -> tuple[int, list[str]]:
    rest = path.lstrip("^")
    return len(path) - len(rest), rest.split(".") if rest else []


def join_path(prefix: str, path: str) -> str:
    """``path``, relative to a module at ``prefix``, relative to where ``prefix`` is seen from."""
    up_prefix, names = _steps(prefix)
    up, rest = _steps(path)
    kept = max(len(names) - up, 0)
    return "^" * (up_prefix + max(up - len(names), 0)) + ".".join(names[:kept] + rest)


def seen_from_caller(name: str, text: str) -> str:
    """An operation's text, in the computation of a call at ``name``, seen from its caller."""
    if "@" not in text:
        return text
    return _REFERENCE.sub(lambda m: "@" + join_path(name, m[1]), text)


@dataclass(frozen=True)
class SubCall:
    """A recorded submodule's call, by its path from the caller, inside its computation."""

    name: str
    computation: Computation


@dataclass(frozen=True)
class Computation:
    """The operations of one call; ``items`` are operation texts and submodule calls.

    ``ops`` (every operation the call ran, also after its list stops), ``stop`` (the path
    of the module whose operation the list stops at), ``costs`` (over the listed operations)
    and ``site`` (``path:line`` of the code that ran the operation the list stops at) are
    known in the recording process only, and are no part of the computation: ``ops`` and
    ``stop`` follow the data."""

    items: tuple[str | SubCall, ...]
    ops: int | None = field(default=None, compare=False)
    stop: str | None = field(default=None, compare=False)
    costs: Costs | None = field(default=None, compare=False)
    site: str | None = field(default=None, compare=False)

    @cached_property
    def flat(self) -> tuple[str, ...]:
        """Every operation, the submodules' in place."""
        ops: list[str] = []
        for item in self.items:
            if isinstance(item, str):
                ops.append(item)
            else:
                ops += (seen_from_caller(item.name, op) for op in item.computation.flat)
        return tuple(ops)

    @property
    def partial(self) -> bool:
        """Whether the list stops at an operation that follows the data."""
        return bool(self.flat) and self.flat[-1].endswith(FOLLOWS_DATA)

    def coverage(self) -> str | None:
        """What the compute hash leaves out, in a line (None: nothing, or not known)."""
        if not self.partial or self.ops is None:
            return None
        covered, last = len(self.flat), self.flat[-1].partition("(")[0]
        where = (f" in {self.stop}" if self.stop else "") + (
            f" at {self.site}" if self.site else ""
        )
        return (
            f"covers {covered:,} of {self.ops:,} operations: op {covered:,}, {last}{where}, "
            "follows the data"
        )

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
    table = {c.hash: c.stored_items() for root in computations for c in root.closure()}
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
