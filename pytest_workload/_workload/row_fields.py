"""What a report's workload and a snapshot's entry share, read and checked by one set of rules:
their identity fields, their paths and their links in the tree."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from .._core.errors import WorkloadDataError
from .._core.fields import read_field, read_strings
from .paths import expand_paths, name_first
from .signature import InputSignature


def read_paths(d: Mapping[str, Any]) -> tuple[str, ...]:
    """``name`` and the paths its ``paths`` patterns stand for (just ``name`` when they are
    absent: a scheme 1 snapshot, which keeps one entry per path)."""
    name = read_field(d, "name", str)
    patterns = read_field(d, "paths", list, optional=True)
    if patterns is None:
        return (name,)
    paths = expand_paths(patterns)
    if name not in paths:
        raise WorkloadDataError(f"name {name!r} is not one of its paths")
    return name_first(name, paths)


def check_paths(name: str, paths: tuple[str, ...]) -> tuple[str, ...]:
    """A workload's paths, its name first: ``(name,)`` when none are given."""
    if not paths:
        return (name,)
    if paths[0] != name:
        raise ValueError(f"the first path {paths[0]!r} must be the name {name!r}")
    return paths


def read_identity(d: Mapping[str, Any]) -> dict[str, Any]:
    """The fields a report's workload and a snapshot's entry share, read by one set of rules,
    as keyword arguments for either class."""
    submodules = read_field(d, "submodules", dict, optional=True) or {}
    if not all(isinstance(v, str) for v in submodules.values()):
        raise WorkloadDataError("submodules must map names to structure hashes")
    paths = read_paths(d)
    return {
        "name": paths[0],
        "paths": paths,
        "class_name": read_field(d, "class", str),
        "depth": read_field(d, "depth", int),
        "parent": read_field(d, "parent", str, optional=True),
        "structure_hash": read_field(d, "structure_hash", str),
        "input_signature": InputSignature.from_dict(d.get("input_signature")),
        "hash": read_field(d, "hash", str),
        "submodules": tuple(submodules.items()),
        "arg_names": read_strings(d, "arg_names") or (),
        "structure_hash_without_dtypes": read_field(
            d, "structure_hash_without_dtypes", str, optional=True
        ),
    }


class _Linked(Protocol):
    @property
    def hash(self) -> str: ...
    @property
    def depth(self) -> int: ...
    @property
    def parent(self) -> str | None: ...


def check_links(rows: Sequence[_Linked], where: str) -> None:
    """Every row's ``parent`` (and ``caller``) must name a calling row one level up, and a root
    has none: a forged link would drop a workload from every check that walks the tree."""
    depths: dict[str, set[int]] = {}
    for r in rows:
        depths.setdefault(r.hash, set()).add(r.depth)
    for row, r in enumerate(rows):
        caller = getattr(r, "caller", None)
        if r.depth < 0:
            raise WorkloadDataError(f"{where}, workload {row}: depth {r.depth} is negative")
        if (r.depth == 0) != (r.parent is None):
            raise WorkloadDataError(
                f"{where}, workload {row}: depth {r.depth} with parent {r.parent!r} (a workload "
                "has a parent exactly when it is not at depth 0)"
            )
        if caller is not None:
            if not 0 <= caller < row:
                raise WorkloadDataError(
                    f"{where}, workload {row}: caller {caller} is not an earlier row"
                )
            up = rows[caller]
            if up.hash != r.parent or up.depth != r.depth - 1:
                raise WorkloadDataError(
                    f"{where}, workload {row}: parent and depth do not match caller row {caller}"
                )
        elif r.parent is not None and r.depth - 1 not in depths.get(r.parent, set()):
            raise WorkloadDataError(
                f"{where}, workload {row}: parent {r.parent!r} is not the hash of a workload at "
                f"depth {r.depth - 1}"
            )
