"""The snapshot document: a test's workload table as its ``.workloads`` file keeps it."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Final

from .._compile import CompileHealth, Readiness, read_compile_fields
from .._core.errors import OldFormatError, WorkloadDataError
from .._core.files import SNAPSHOT_FORMAT, SNAPSHOT_FORMAT_KEY
from .._core.strict_json import (
    Json,
    canonical_json,
    load_json,
    read_field,
    read_object,
    read_strings,
)
from .._workload.computation import Computation, computation_table, read_computations
from .._workload.costs import Costs
from .._workload.modules import ModuleTable, closure, modules_to_dict, read_modules
from .._workload.paths import Paths, check_links, name_first, read_identity
from .._workload.signature import InputSignature
from .._workload.workload import Workload


@dataclass(frozen=True)
class SnapshotEntry(Paths):
    """One workload as the snapshot keeps it: identity plus what a reviewer reads, nothing
    machine- or run-dependent (timings, call counts, call sites)."""

    name: str
    class_name: str
    depth: int
    parent: str | None
    structure_hash: str
    input_signature: InputSignature
    hash: str
    submodules: tuple[tuple[str, str], ...] = ()
    arg_names: tuple[str, ...] = ()
    user_key: Json = None
    flops: int | None = None
    param_bytes: int | None = None
    #: For review only (never compared): they tell a dtype change from a structure change.
    param_dtypes: tuple[str, ...] | None = None
    structure_hash_without_dtypes: str | None = None
    #: The operations' hash (None: not recorded there; see :func:`.diff.computes_agree`).
    compute_hash: str | None = None
    data_dependent: bool = False
    #: Compared within ``--workload-cost-tolerance`` (see :func:`.diff.costs_agree`).
    costs: Costs | None = None
    paths: tuple[str, ...] = ()
    #: What dynamo compiled (None: not observed; see :func:`.._compile.health_agrees`).
    compile_health: CompileHealth | None = None
    #: The same for ``compile=`` on the marker (None: not asked for, or not checked).
    compile_readiness: Readiness | None = None

    @classmethod
    def from_workload(cls, w: Workload) -> SnapshotEntry:
        shared = {
            f.name: getattr(w, f.name) for f in fields(cls) if not f.name.startswith("param_")
        }
        return cls(**shared, param_bytes=w.params.bytes, param_dtypes=w.params.dtypes)

    def to_dict(self) -> dict[str, Json]:
        out: dict[str, Json] = {
            "name": self.name,
            "paths": list(self.patterns),
            "class": self.class_name,
            "depth": self.depth,
            "parent": self.parent,
            "input": self.input_signature.format(),
            "arg_names": list(self.arg_names),
            "input_signature": self.input_signature.to_dict(),
            "structure_hash": self.structure_hash,
            "structure_hash_without_dtypes": self.structure_hash_without_dtypes,
            "hash": self.hash,
            "param_bytes": self.param_bytes,
            "param_dtypes": None if self.param_dtypes is None else list(self.param_dtypes),
            "flops": self.flops,
            "costs": None if self.costs is None else self.costs.to_dict(),
            "submodules": dict(self.submodules),
        }
        # (absent when unknown or off, as in every snapshot written so far)
        if self.compute_hash is not None:
            out["compute_hash"] = self.compute_hash
        if self.data_dependent:
            out["data_dependent"] = True
        if self.user_key is not None:
            out["user_key"] = self.user_key
        if self.compile_health is not None:
            out["compile"] = self.compile_health.to_dict()
        if self.compile_readiness is not None:
            out["compile_readiness"] = self.compile_readiness.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: object) -> SnapshotEntry:
        d = read_object(data, "workload")
        if not isinstance(d.get("submodules"), dict):
            raise WorkloadDataError("missing or non-object field 'submodules'")
        return cls(
            **read_identity(d),
            user_key=d.get("user_key"),
            flops=read_field(d, "flops", int, optional=True),
            param_bytes=read_field(d, "param_bytes", int, optional=True),
            param_dtypes=read_strings(d, "param_dtypes"),
            compute_hash=read_field(d, "compute_hash", str, optional=True),
            data_dependent=read_field(d, "data_dependent", bool, optional=True) or False,
            costs=None if d.get("costs") is None else Costs.from_dict(d["costs"]),
            **read_compile_fields(d),
        )


#: The fields :meth:`SnapshotEntry.to_dict` always writes (but for two for review only, which
#: snapshots written before them lack), of which only ``_NULLABLE`` may be null (unknown);
#: ``_LEFT_OUT`` it leaves out, never writes as null, when unknown or off.
_ALWAYS_WRITTEN: Final = (
    "name", "paths", "class", "depth", "parent", "input", "arg_names", "input_signature",
    "structure_hash", "hash", "param_bytes", "flops", "costs", "submodules",
)  # fmt: skip
_NULLABLE: Final = ("parent", "flops", "costs")
_LEFT_OUT: Final = (
    "compute_hash", "data_dependent", "user_key", "compile", "compile_readiness",
)  # fmt: skip
_NEVER_NULL: Final = tuple(k for k in _ALWAYS_WRITTEN + _LEFT_OUT if k not in _NULLABLE)


def _check_written(data: object) -> None:
    """In a file of this release's format: a field left out or null where the writer never
    leaves it so (an edit that would turn a check off, such as ``"compute_hash": null``), or
    an ``input`` that is not the input signature's (an edit a reviewer would read, and the
    verdict would not)."""
    d = read_object(data, "workload")
    missing = next((k for k in _ALWAYS_WRITTEN if k not in d), None)
    if missing is not None:
        raise WorkloadDataError(f"missing field {missing!r}")
    null = next((k for k in _NEVER_NULL if k in d and d[k] is None), None)
    if null is not None:
        left_out = " (it is left out when unknown or off)" if null in _LEFT_OUT else ""
        raise WorkloadDataError(f"field {null!r} is null{left_out}")
    shown = read_field(d, "input", str)
    signature = InputSignature.from_dict(d["input_signature"]).format()
    if shown != signature:
        raise WorkloadDataError(
            f"field 'input' is {inline_json(shown)}, but input_signature is "
            f"{inline_json(signature)}"
        )


def _fold_key(entry: SnapshotEntry) -> tuple[object, ...]:
    """Every stored field but the paths (a user key by its canonical JSON: 1 is not True)."""
    return tuple(
        canonical_json(entry.user_key) if f.name == "user_key" else getattr(entry, f.name)
        for f in fields(entry)
        if f.name not in ("name", "paths")
    )


def fold(entries: Iterable[SnapshotEntry]) -> tuple[SnapshotEntry, ...]:
    """One entry per workload: entries equal in every stored field but their paths (the
    rows of identical layers) as the first of them, with every path."""
    folded: dict[tuple[object, ...], list[SnapshotEntry]] = {}
    for entry in entries:
        folded.setdefault(_fold_key(entry), []).append(entry)
    return tuple(
        same[0]
        if len(same) == 1
        else replace(same[0], paths=name_first(same[0].name, (p for e in same for p in e.paths)))
        for same in folded.values()
    )


@dataclass(frozen=True)
class SnapshotDocument:
    """A test's workload table as its snapshot file stores it, with each distinct computation
    and module description once, and the library versions. Only the entries decide a
    match."""

    scheme: int
    entries: tuple[SnapshotEntry, ...]
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
            fold(SnapshotEntry.from_workload(w) for w in rows),
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
        out["workloads"] = [e.to_dict() for e in self.entries]
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
                _check_written(data)
                entries.append(SnapshotEntry.from_dict(data))
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
