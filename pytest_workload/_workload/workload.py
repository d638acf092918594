"""The recorded data: frozen dataclasses that cross process boundaries (xdist workers), in
their two JSON forms, the report's and a snapshot file's."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from operator import attrgetter
from typing import ClassVar, Final

from .._compile.health import CompileHealth, Readiness
from .._core.codec import Record, check_version, codec, snapshot_fields
from .._core.errors import WorkloadDataError
from .._core.files import FINGERPRINT_SCHEME, SNAPSHOT_FORMAT, SNAPSHOT_FORMAT_KEY
from .._core.strict_json import Json, canonical_json, read_field, read_object
from .computation import Computation, computation_table, read_computations
from .costs import Costs
from .modules import ModuleTable, closure, modules_to_dict, read_modules
from .paths import PATHS, SUBMODULES, compress_paths, name_first
from .signature import InputSignature, workload_key
from .timing import Measured, Timing

_COUNT: Final = codec(minimum=0)
#: A snapshot file's versions, written and checked first: its key, its name, what this release
#: does, and the version it writes and reads.
_VERSIONS: Final = (
    (SNAPSHOT_FORMAT_KEY, "snapshot format", "reads format", SNAPSHOT_FORMAT),
    ("fingerprint_scheme", "fingerprint scheme", "computes scheme", FINGERPRINT_SCHEME),
)
#: What depends on the run (timings, call counts, call sites): the report's, not the snapshot's.
_RUN: Final = codec(snapshot=False)


@dataclass(frozen=True)
class ParamStats(Record):
    """Parameter count, bytes (from each parameter's real dtype) and distinct dtypes of a
    module tree."""

    count: int = field(metadata=_COUNT)
    bytes: int = field(metadata=_COUNT)
    dtypes: tuple[str, ...] | None = None


@dataclass(frozen=True)
class UserKey(Record):
    """A key a ``pytest_workload_key`` hook returned, and which calls returned it (0 in a
    snapshot, which keeps the key only)."""

    key: Json
    first_call: int = field(default=0, metadata=_RUN)
    calls: int = field(default=0, metadata=_RUN)

    what: ClassVar[str] = "user key"


@dataclass(frozen=True, kw_only=True)
class Workload(Record):
    """One workload as one test saw it: one module structure called with one input signature.

    Example:
        A test that calls ``model(torch.rand(1, 3, 224, 224))`` twice and
        ``model(torch.rand(8, 3, 224, 224))`` once records two workloads of one
        ``structure_hash``: one with ``calls == 2`` and ``key == [structure_hash, [{"tensor":
        [1, 3, 224, 224], "dtype": "float32"}], {}]``, and one with ``calls == 1`` whose key
        holds ``[8, 3, 224, 224]``.

    A workload is one row per distinct (workload, caller) in the test: a submodule run by
    several paths (twelve identical blocks) is one row with every path in ``paths``, and its
    counts and times are over all of them. ``parent`` and ``caller`` are None for a root, and
    only for a root.

    Attributes:
        name: The first path that ran it (a root: its call site's name).
        paths: Every path that ran it, ``name`` first, the others in natural order.
        class_name: The module's class, ``module.QualName``.
        depth: 0 for a root, 1 for its recorded children, and so on.
        parent: The calling workload's hash, or None for a root.
        caller: The calling workload's row in the test's workloads, or None for a root (and
            in a snapshot, which links by ``parent``).
        structure_hash: The module tree's hash (see ``structure_hash``).
        input_signature: The call's arguments as described (shapes, dtypes, values).
        hash: The workload hash, SHA-256 of (scheme, structure hash, input signature).
        calls: How many calls ran it (0 in a snapshot).
        params: Parameter count, bytes and dtypes of its tree.
        arg_names: The names of its ``forward``'s positional parameters (labels for the
            inputs).
        location: Where a root was called from, ``path:line``; None for submodules.
        total_time_s: Seconds its calls took in the test, all together; None when not timed.
        submodules: ``(name, structure hash)`` of each direct child.
        user_keys: Keys the ``pytest_workload_key`` hook returned, with the calls that got
            each.
        timing: Its per-call time, measured after the test; None when not timed.
        flops: Floating-point operations per call; None where unknown.
        peak_memory_bytes: CUDA memory a replayed call allocated at its peak, beyond what was
            allocated before it; None elsewhere.
        output_signature: Its output, described as the inputs are.
        structure_hash_without_dtypes: Tells a change of parameter or buffer dtypes from one
            of structure; None when unknown.
        measured: How ``timing`` and ``flops`` were obtained; None for a failed test's root.
        compute_hash: The hash of the operations its first traced call ran; None when not
            known (``compute_unknown`` says why).
        data_dependent: Two traced calls ran different operations.
        compute_unknown: Why ``compute_hash`` is None.
        compute_partial: What the compute hash leaves out (the operations from the first that
            follows the data on), in a line; None when it covers every operation.
        computation: The operations themselves, where known (a snapshot stores them, the
            JSON report only their hash).
        costs: Bytes read and written, operation counts and peak allocation of its traced
            call, over the operations the compute hash covers; None when not traced.
        compile_health: What dynamo compiled over the calls of a root the test compiled
            itself (graphs, graph breaks, recompiles); None for any other workload, and for
            a module whose class dynamo had compiled before the test.
        compile_readiness: The same, for a root compiled after the test on request
            (``@pytest.mark.workloads(compile=...)``) with its backend; None when not asked
            for or not checked.
    """

    name: str
    paths: tuple[str, ...] = field(default=(), metadata=PATHS)
    class_name: str = field(metadata=codec(key="class"))
    depth: int
    parent: str | None
    caller: int | None = field(default=None, metadata=_RUN)
    structure_hash: str
    structure_hash_without_dtypes: str | None = None
    input_signature: InputSignature
    #: Its input signature's readable form, as the report shows it.
    input: str = field(init=False, compare=False)
    #: ``[structure_hash, args, kwargs]``: the workload's identity with its structure kept
    #: apart from its inputs, as ``distance_factor`` and the JSON report's ``key`` take it.
    key: list[Json] = field(init=False, compare=False, metadata=_RUN)
    hash: str
    calls: int = field(default=0, metadata=codec(minimum=1, snapshot=False))
    params: ParamStats
    arg_names: tuple[str, ...] = ()
    location: str | None = field(default=None, metadata=_RUN)
    total_time_s: float | None = field(default=None, metadata=_RUN)
    submodules: tuple[tuple[str, str], ...] = field(default=(), metadata=SUBMODULES)
    user_keys: tuple[UserKey, ...] = ()
    timing: Timing | None = field(default=None, metadata=_RUN)
    flops: int | None = field(default=None, metadata=_COUNT)
    peak_memory_bytes: int | None = field(default=None, metadata=codec(minimum=0, snapshot=False))
    output_signature: Json = field(default=None, metadata=_RUN)
    measured: Measured | None = field(default=None, metadata=_RUN)
    compute_hash: str | None = None
    data_dependent: bool = False
    compute_unknown: str | None = field(default=None, metadata=_RUN)
    compute_partial: str | None = field(default=None, metadata=_RUN)
    computation: Computation | None = field(
        default=None, compare=False, repr=False, metadata=codec(skip=True)
    )
    costs: Costs | None = None
    compile_health: CompileHealth | None = field(default=None, metadata=codec(key="compile"))
    compile_readiness: Readiness | None = None

    what: ClassVar[str] = "workload"

    def __post_init__(self) -> None:
        if not self.paths:
            object.__setattr__(self, "paths", (self.name,))
        elif self.paths[0] != self.name:
            raise ValueError(f"the first path {self.paths[0]!r} must be the name {self.name!r}")
        object.__setattr__(self, "input", self.input_signature.format())
        object.__setattr__(self, "key", workload_key(self.structure_hash, self.input_signature))

    @cached_property
    def patterns(self) -> list[str]:
        """``paths`` compressed, as stored."""
        return compress_paths(self.paths)

    @cached_property
    def label(self) -> str:
        """Its one path as it is, or for several their patterns (``blocks.[0-49]``)."""
        return self.paths[0] if len(self.paths) == 1 else ", ".join(self.patterns)


def _read_rows(
    d: Mapping[str, Json], read: Callable[[object], Workload], where: str
) -> list[Workload]:
    """Field ``workloads`` read row by row; every row's ``parent`` (and ``caller``) must name a
    calling row one level up, and a root has none: a forged link would drop a workload from
    every check that walks the tree. ``where`` starts each error (empty, or ``"test 'x', "``)."""
    rows = []
    for row, data in enumerate(read_field(d, "workloads", list)):
        try:
            rows.append(read(data))
        except WorkloadDataError as exc:
            raise WorkloadDataError(f"{where}workload {row}: {exc}") from None
    levels = {(r.hash, r.depth) for r in rows}
    for row, r in enumerate(rows):
        caller = r.caller
        if r.depth < 0:
            raise WorkloadDataError(f"{where}workload {row}: depth {r.depth} is negative")
        if (r.depth == 0) != (r.parent is None):
            raise WorkloadDataError(
                f"{where}workload {row}: depth {r.depth} with parent {r.parent!r} (a workload "
                "has a parent exactly when it is not at depth 0)"
            )
        if caller is not None:
            if not 0 <= caller < row:
                raise WorkloadDataError(
                    f"{where}workload {row}: caller {caller} is not an earlier row"
                )
            up = rows[caller]
            if up.hash != r.parent or up.depth != r.depth - 1:
                raise WorkloadDataError(
                    f"{where}workload {row}: parent and depth do not match caller row {caller}"
                )
        elif r.parent is not None and (r.parent, r.depth - 1) not in levels:
            raise WorkloadDataError(
                f"{where}workload {row}: parent {r.parent!r} is not the hash of a workload at "
                f"depth {r.depth - 1}"
            )
    return rows


def fold(rows: Iterable[Workload]) -> tuple[Workload, ...]:
    """The rows as a snapshot keeps them: rows equal in every stored field but their paths
    (identical layers) as the first of them with every path, none naming its caller's row."""
    others = (n for n in snapshot_fields(Workload) if n not in ("name", "paths", "user_keys"))
    kept = attrgetter(*others)
    folded: dict[tuple[object, ...], list[Workload]] = {}
    for row in rows:
        # (user keys by their JSON: 1 is not True)
        key = (kept(row), tuple(canonical_json(k.key) for k in row.user_keys))
        folded.setdefault(key, []).append(row)
    return tuple(
        same[0] if len(same) == 1 and same[0].caller is None else _copied(same)
        for same in folded.values()
    )


def _copied(same: list[Workload]) -> Workload:
    """The first of ``same`` with every path and no caller, copied: built anew, it would derive
    its ``input`` and ``key`` again."""
    paths = name_first(same[0].name, (p for e in same for p in e.paths))
    out = object.__new__(Workload)
    fields = vars(same[0])  # (without the views cached from the first's paths: every one)
    vars(out).update({k: v for k, v in fields.items() if k not in _VIEWS}, caller=None, paths=paths)
    return out


#: Workload's cached properties, which a copy must compute afresh.
_VIEWS = frozenset(n for n, v in vars(Workload).items() if isinstance(v, cached_property))


def _libraries(d: Mapping[str, Json], where: str) -> dict[str, str]:
    libraries = read_field(d, "libraries", dict, optional=True) or {}
    if not all(isinstance(v, str) for v in libraries.values()):
        raise WorkloadDataError(f"{where}libraries must map distribution names to versions")
    return libraries


@dataclass(frozen=True)
class TestWorkloads:
    """Every workload one test recorded, in order of first call (parents before children).

    Example:
        Iterate it for every row, or walk the tree from ``roots()`` with ``children()``:

        ```python
        for root in test.roots():
            print(root.label, root.class_name, root.hash[:8])
            for child in test.children(root):
                print("  ", child.label, child.class_name, child.hash[:8])
        ```

    Attributes:
        nodeid: The test's pytest node id; empty for a table read from a snapshot file, which
            is named after its test.
        workloads: Its rows (``len()`` and iteration go over them).
        modules: The description of every module in the recorded trees, by structure hash.
        libraries: torch's version and those of the distributions that define the trees'
            classes, by distribution name.
        fixtures: The fixtures the test used that called a model in their setup, outside the
            test's call: those calls are not recorded.
    """

    __test__ = False  # not a pytest test class

    nodeid: str
    workloads: tuple[Workload, ...]
    modules: ModuleTable = field(default_factory=dict, compare=False, repr=False)
    libraries: Mapping[str, str] = field(default_factory=dict, compare=False)
    fixtures: tuple[str, ...] = field(default=(), compare=False)

    def __iter__(self) -> Iterator[Workload]:
        return iter(self.workloads)

    def __len__(self) -> int:
        return len(self.workloads)

    def roots(self) -> tuple[Workload, ...]:
        """The workloads at depth 0: the calls the test made itself."""
        return tuple(w for w in self.workloads if w.parent is None)

    @cached_property
    def _rows(self) -> dict[int, int]:
        return {id(w): row for row, w in enumerate(self.workloads)}

    def children(self, parent: Workload) -> tuple[Workload, ...]:
        """The rows ``parent`` (one of this table's rows, or a row equal to it) called: by
        row where a row names its caller, else (a folded table) by hash one level down."""
        found = self._rows.get(id(parent))
        row = self.workloads.index(parent) if found is None else found
        return tuple(
            w
            for w in self.workloads
            if w.caller == row
            or (w.caller is None and w.parent == parent.hash and w.depth == parent.depth + 1)
        )

    def folded(self) -> TestWorkloads:
        """The table as its snapshot keeps it: rows differing only in paths and callers as one."""
        return replace(self, workloads=fold(self.workloads))

    def to_dict(self, modules: bool = True) -> dict[str, Json]:
        """With ``modules=False`` (the JSON report, which keeps one table for all its tests),
        the descriptions are left out."""
        out: dict[str, Json] = {
            "nodeid": self.nodeid,
            "workloads": [w.to_dict() for w in self.workloads],
        }
        if self.libraries:
            out["libraries"] = dict(self.libraries)
        if self.fixtures:
            out["fixtures"] = list(self.fixtures)
        if modules and self.modules:
            out["modules"] = modules_to_dict(self.modules)
        return out

    @classmethod
    def from_dict(cls, data: object, modules: ModuleTable | None = None) -> TestWorkloads:
        """``modules``: the report's table, which this test takes its descriptions from
        (without it, the test's own ``modules`` field)."""
        d = read_object(data, "test")
        nodeid = read_field(d, "nodeid", str)
        if not nodeid:
            raise WorkloadDataError("field 'nodeid' is empty")
        table = read_modules(d["modules"]) if modules is None and "modules" in d else modules
        workloads = _read_rows(d, Workload.from_dict, f"test {nodeid!r}, ")
        for row, w in enumerate(workloads):
            if w.parent is not None and w.caller is None:
                raise WorkloadDataError(f"test {nodeid!r}, workload {row}: no 'caller'")
        fixtures = read_field(d, "fixtures", list, optional=True) or []
        if not all(isinstance(f, str) for f in fixtures):
            raise WorkloadDataError(f"test {nodeid!r}: fixtures must be a list of names")
        return cls(
            nodeid=nodeid,
            workloads=tuple(workloads),
            modules=closure(table or {}, (w.structure_hash for w in workloads)),
            libraries=_libraries(d, f"test {nodeid!r}: "),
            fixtures=tuple(fixtures),
        )

    def to_snapshot(self) -> dict[str, Json]:
        """The folded table as its snapshot file holds it, with each computation and module
        description once."""
        rows = fold(self.workloads)
        out: dict[str, Json] = {key: version for key, _, _, version in _VERSIONS}
        if self.libraries:
            out["libraries"] = dict(sorted(self.libraries.items()))
        out["workloads"] = [w.to_snapshot() for w in rows]
        computations = computation_table([w.computation for w in rows if w.computation])
        if computations:
            out["computations"] = dict(computations)
        modules = closure(self.modules, (w.structure_hash for w in rows))
        if modules:
            out["modules"] = modules_to_dict(modules)
        return out

    @classmethod
    def from_snapshot(cls, data: object) -> TestWorkloads:
        """A snapshot file's table; one of another format or scheme raises
        :class:`.FutureFormatError` or :class:`.OldFormatError` before its rows are read."""
        d = read_object(data, "snapshot")
        for key, what, does, reads in _VERSIONS:
            check_version(d, key, what, reads, does)
        rows = _read_rows(d, Workload.from_snapshot, "")
        computations = read_computations(d.get("computations", {}))
        for row, w in enumerate(rows):
            if w.compute_hash is None:
                continue
            if w.compute_hash not in computations:
                raise WorkloadDataError(
                    f"workload {row}: compute_hash {w.compute_hash[:16]!r} has no stored "
                    "operations in 'computations'"
                )
            rows[row] = replace(w, computation=computations[w.compute_hash])
        return cls("", tuple(rows), read_modules(d.get("modules", {})), _libraries(d, ""))
