"""The snapshot document: a test's workload table as its ``.workloads`` file keeps it."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from .._core.codec import snapshot_fields
from .._core.errors import OldFormatError, WorkloadDataError
from .._core.files import SNAPSHOT_FORMAT, SNAPSHOT_FORMAT_KEY
from .._core.strict_json import (
    Json,
    canonical_json,
    load_json,
    read_field,
    read_object,
)
from .._workload.computation import Computation, computation_table, read_computations
from .._workload.modules import ModuleTable, closure, modules_to_dict, read_modules
from .._workload.paths import name_first
from .._workload.workload import Workload, check_links


def _fold_key(entry: Workload, kept: tuple[str, ...]) -> tuple[object, ...]:
    """Every field the snapshot keeps but the paths (user keys by their JSON: 1 is not True)."""
    return tuple(
        tuple(canonical_json(k.key) for k in entry.user_keys)
        if name == "user_keys"
        else getattr(entry, name)
        for name in kept
        if name not in ("name", "paths")
    )


def fold(entries: Iterable[Workload]) -> tuple[Workload, ...]:
    """One entry per workload: entries equal in every stored field but their paths (the
    rows of identical layers) as the first of them, with every path."""
    kept = snapshot_fields(Workload)
    folded: dict[tuple[object, ...], list[Workload]] = {}
    for entry in entries:
        folded.setdefault(_fold_key(entry, kept), []).append(entry)
    return tuple(
        same[0]
        if len(same) == 1
        else replace(same[0], paths=name_first(same[0].name, (p for e in same for p in e.paths)))
        for same in folded.values()
    )


@dataclass(frozen=True)
class SnapshotDocument:
    """A test's workload table as its snapshot file stores it, with each distinct computation
    and module description once, and the library versions. Only the entries decide a match:
    the workloads as the snapshot keeps them (see :meth:`.Record.to_snapshot`)."""

    scheme: int
    entries: tuple[Workload, ...]
    computations: Mapping[str, Computation] = field(default_factory=dict, compare=False)
    modules: ModuleTable = field(default_factory=dict, compare=False)
    libraries: Mapping[str, str] = field(default_factory=dict, compare=False)

    @classmethod
    def of(
        cls,
        scheme: int,
        workloads: Iterable[Workload],
        modules: ModuleTable | None = None,
        libraries: Mapping[str, str] | None = None,
    ) -> SnapshotDocument:
        rows = tuple(workloads)
        found = (c for w in rows if w.computation is not None for c in w.computation.closure())
        return cls(
            scheme,
            fold(rows),
            {c.hash: c for c in found},
            closure(modules or {}, (w.structure_hash for w in rows)),
            dict(libraries or {}),
        )

    def to_dict(self) -> dict[str, Json]:
        out: dict[str, Json] = {
            SNAPSHOT_FORMAT_KEY: SNAPSHOT_FORMAT,
            "fingerprint_scheme": self.scheme,
        }
        if self.libraries:
            out["libraries"] = dict(sorted(self.libraries.items()))
        out["workloads"] = [e.to_snapshot() for e in self.entries]
        if self.computations:
            out["computations"] = dict(computation_table(list(self.computations.values())))
        if self.modules:
            out["modules"] = modules_to_dict(self.modules)
        return out

    @classmethod
    def from_dict(cls, data: object) -> SnapshotDocument:
        d = read_object(data, "snapshot")
        version = read_field(d, SNAPSHOT_FORMAT_KEY, int)
        scheme = read_field(d, "fingerprint_scheme", int)
        if version > SNAPSHOT_FORMAT:
            raise WorkloadDataError(
                f"snapshot format {version} is not supported (this release reads format "
                f"{SNAPSHOT_FORMAT}); upgrade pytest-workload or regenerate the snapshot"
            )
        if version != SNAPSHOT_FORMAT:
            raise OldFormatError(f"snapshot format {version}", f"format {SNAPSHOT_FORMAT}")
        entries = []
        for row, data in enumerate(read_field(d, "workloads", list)):
            try:
                entries.append(Workload.from_snapshot(data))
            except WorkloadDataError as exc:
                raise WorkloadDataError(f"workload {row}: {exc}") from None
        check_links(entries, "snapshot")
        computations = read_computations(d.get("computations", {}))
        for row, entry in enumerate(entries):
            if entry.compute_hash is not None and entry.compute_hash not in computations:
                raise WorkloadDataError(
                    f"workload {row}: compute_hash {entry.compute_hash[:16]!r} has no stored "
                    "operations in 'computations'"
                )
        libraries = read_field(d, "libraries", dict, optional=True) or {}
        if not all(isinstance(v, str) for v in libraries.values()):
            raise WorkloadDataError("libraries must map distribution names to versions")
        return cls(
            scheme=scheme,
            entries=tuple(entries),
            computations=computations,
            modules=read_modules(d.get("modules", {})),
            libraries=libraries,
        )

    def to_text(self) -> str:
        """Review-friendly JSON: one field per line, signatures kept on one line, and one
        operation and one module description per line, so a change is one changed line."""
        fields = (f"{inline_json(k)}: {_render(k, v, 4)}" for k, v in self.to_dict().items())
        return _block(fields, 2) + "\n"

    @classmethod
    def from_text(cls, text: str) -> SnapshotDocument:
        return cls.from_dict(load_json(text))


def inline_json(value: Any) -> str:
    """JSON on one line, as the snapshot text and the messages show a value."""
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def _block(rows: Iterable[str], indent: int, brackets: str = "{}") -> str:
    """``rows`` one per line at ``indent`` spaces, inside brackets that close two spaces left."""
    pad = " " * indent
    return f"{brackets[0]}\n" + ",\n".join(pad + r for r in rows) + f"\n{pad[:-2]}{brackets[1]}"


def _render(key: str, value: Json, indent: int) -> str:
    """A field's value: each workload, operation, module description and submodule on its
    own line, anything else inline."""
    if key == "workloads" and isinstance(value, list) and value:
        rows = (
            _block(
                (f"{inline_json(k)}: {_render(k, v, indent + 4)}" for k, v in e.items()), indent + 2
            )
            for e in value
            if isinstance(e, dict)
        )
        return _block(rows, indent, "[]")
    if key in ("computations", "modules", "submodules") and isinstance(value, dict) and value:
        nested = key == "computations"
        return _block(
            (
                f"{inline_json(k)}: {_render('operations' if nested else '', v, indent + 2)}"
                for k, v in value.items()
            ),
            indent,
        )
    if key == "operations" and isinstance(value, list) and value:
        return _block((inline_json(v) for v in value), indent, "[]")
    return inline_json(value)
