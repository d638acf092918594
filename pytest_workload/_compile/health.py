"""The records of compile health and readiness, and the rules that gate them. Messages are
never part of a key, so a library that rewords a reason changes nothing (docs/how-to/compile.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import ClassVar, TypeVar

from .._core.codec import Record, codec
from .._core.errors import WorkloadDataError

_NUMBER = re.compile(r"\d+(?:\.\d+)?")


@dataclass(frozen=True)
class GraphBreak(Record):
    """Graph breaks of one ``kind`` at one ``site``, once per compile of the frame (the fields:
    docs/reference/snapshot-files.md, ``compile``)."""

    site: str
    function: str
    kind: str
    reason: str
    hint: str | None = None
    count: int = field(default=1, metadata=codec(minimum=1))

    what: ClassVar[str] = "graph break"

    @property
    def key(self) -> tuple[str, str]:
        return (self.site, self.kind)

    def describe(self) -> str:
        hint = f"; hint: {self.hint}" if self.hint else ""
        return f"{self.site} in {self.function} ({self.reason} [{self.kind}]{hint})"


@dataclass(frozen=True)
class Recompile(Record):
    """Recompiles of ``function`` for one ``guard`` at one ``site``: the user code the guard
    stands for, else the compiled function's first line (snapshot-files.md, ``compile``)."""

    site: str
    function: str
    guard: str
    hint: str | None = None
    count: int = field(default=1, metadata=codec(minimum=1))

    what: ClassVar[str] = "recompile"

    @property
    def key(self) -> tuple[str, str]:
        # (an int attribute that changes fails ``s.step == 0``, then ``s.step == 1``)
        return (self.site, _NUMBER.sub("#", self.guard))

    def describe(self) -> str:
        hint = f" (hint: {self.hint})" if self.hint else ""
        return f"{self.site} in {self.function}: {self.guard}{hint}"


_Item = TypeVar("_Item", GraphBreak, Recompile)


def _merge(items: Iterable[_Item]) -> tuple[_Item, ...]:
    """One item per key, counts summed, in order of first sight."""
    merged: dict[tuple[str, str], _Item] = {}
    for item in items:
        seen = merged.get(item.key)
        merged[item.key] = item if seen is None else replace(seen, count=seen.count + item.count)
    return tuple(merged.values())


@dataclass(frozen=True)
class CompileHealth(Record):
    """What dynamo did over a workload's calls in one test (snapshot-files.md, ``compile``)."""

    graphs: int = field(default=0, metadata=codec(minimum=0))
    whole_graph: bool = field(init=False)
    breaks: tuple[GraphBreak, ...] = field(default=(), metadata=codec(key="graph_breaks"))
    recompiles: tuple[Recompile, ...] = ()
    eager_frames: int = field(default=0, metadata=codec(minimum=0))

    what: ClassVar[str] = "compile"

    def __post_init__(self) -> None:
        object.__setattr__(self, "breaks", _merge(self.breaks))
        object.__setattr__(self, "recompiles", _merge(self.recompiles))
        whole = self.graphs > 0 and not self.breaks and not self.eager_frames
        object.__setattr__(self, "whole_graph", whole)


def merge_health(a: CompileHealth | None, b: CompileHealth | None) -> CompileHealth | None:
    """A workload's health after one more call (None: not observed)."""
    if a is None or b is None:
        return a or b
    breaks, recompiles = a.breaks + b.breaks, a.recompiles + b.recompiles
    return CompileHealth(a.graphs + b.graphs, breaks, recompiles, a.eager_frames + b.eager_frames)


def _moved(
    label: str, noun: str, first: str, old: tuple[_Item, ...], new: tuple[_Item, ...]
) -> Iterator[tuple[bool, str]]:
    """Per key whose count changed, whether it grew and a line: ``graph breaks 1 -> 2: new
    break at ...``."""
    head = f"{label} {sum(i.count for i in old)} -> {sum(i.count for i in new)}"
    before, after = ({i.key: i.count for i in items} for items in (old, new))
    for item in new:
        was = before.get(item.key, 0)
        if item.count > was:
            times = "" if was == 0 and item.count == 1 else f" ({was} -> {item.count} times)"
            what = first if not was else f"more {noun}s"
            yield True, f"{head}: {what} at {item.describe()}{times}"
    for item in old:
        now = after.get(item.key, 0)
        if now < item.count:
            what = f"fewer {noun}s" if now else f"no {noun} any more"
            times = f" ({item.count} -> {now} times)" if now else ""
            yield False, f"{head}: {what} at {item.describe()}{times}"


def health_changes(old: CompileHealth | None, new: CompileHealth | None) -> list[tuple[bool, str]]:
    """One line per break or recompile whose count moved, and for eager frames, each with
    whether it grew: a new or more frequent one disagrees with the stored ``old``. Not
    observed on either side: none."""
    if old is None or new is None:  # (dynamo had compiled the code before the test)
        return []
    changes = [
        *_moved("graph breaks", "break", "new break", old.breaks, new.breaks),
        *_moved("recompiles", "recompile", "guard failed", old.recompiles, new.recompiles),
    ]
    if old.eager_frames != new.eager_frames:
        eager = f"frames run eagerly {old.eager_frames} -> {new.eager_frames}"
        changes.append((new.eager_frames > old.eager_frames, eager))
    return changes


#: The backends a readiness check may compile with: the cheap ones, which trace as inductor
#: does (``eager``: dynamo alone; ``aot_eager``: also AOTAutograd) without generating code.
BACKENDS = ("eager", "aot_eager")


@dataclass(frozen=True)
class Readiness(Record):
    """What dynamo did as a workload's first call was compiled with ``backend`` and called
    again as often as the test called it (at most twice)."""

    backend: str
    health: CompileHealth = field(metadata=codec(flatten=True, read=CompileHealth.from_dict))

    what: ClassVar[str] = "compile_readiness"

    def check(self) -> None:
        if self.backend not in BACKENDS:
            raise WorkloadDataError(
                f"field 'backend' must be one of {', '.join(BACKENDS)}, got {self.backend!r}"
            )


def readiness_changes(old: Readiness | None, new: Readiness | None) -> list[tuple[bool, str]]:
    """As :func:`.health_changes`, each line saying it is the readiness check's; another
    backend is said, and agrees. Not checked on either side: none."""
    if old is None or new is None:
        return []
    changes = health_changes(old.health, new.health)
    if old.backend != new.backend:
        changes.insert(0, (False, f"backend {old.backend} -> {new.backend}"))
    return [(grew, f"compile readiness ({new.backend}): {line}") for grew, line in changes]
