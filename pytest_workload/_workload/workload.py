"""The recorded data: frozen dataclasses with ``to_dict``/``from_dict``, nothing else.

These are what crosses process boundaries (xdist workers) and what the JSON report holds.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from functools import cached_property

from .._compile.health import CompileHealth
from .._compile.readiness import Readiness, read_compile_fields
from .._core.errors import WorkloadDataError
from .._core.strict_json import (
    Json,
    canonical_json,
    read_count,
    read_field,
    read_object,
    read_strings,
)
from .computation import Computation
from .costs import Costs
from .modules import ModuleTable, closure, modules_to_dict, read_modules
from .paths import Paths, check_links, read_identity
from .signature import InputSignature, workload_key
from .timing import Measured, Timing


@dataclass(frozen=True)
class ParamStats:
    """Parameter count, bytes (from each parameter's real dtype) and distinct dtypes of a
    module tree."""

    count: int
    bytes: int
    dtypes: tuple[str, ...] | None = None

    def to_dict(self) -> dict[str, Json]:
        dtypes: Json = None if self.dtypes is None else list(self.dtypes)
        return {"count": self.count, "bytes": self.bytes, "dtypes": dtypes}

    @classmethod
    def from_dict(cls, data: object) -> ParamStats:
        if not isinstance(data, dict) or not all(
            isinstance(data.get(k), int) and not isinstance(data.get(k), bool) and data[k] >= 0
            for k in ("count", "bytes")
        ):
            raise WorkloadDataError(
                "params must be an object with integers 'count' and 'bytes' of at least 0"
            )
        return cls(data["count"], data["bytes"], read_strings(data, "dtypes"))


@dataclass(frozen=True)
class UserKey:
    """A key a ``pytest_workload_key`` hook returned, and which calls returned it."""

    key: Json
    first_call: int
    calls: int

    def to_dict(self) -> dict[str, Json]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: object) -> UserKey:
        d = read_object(data, "user key")
        if "key" not in d:
            raise WorkloadDataError("missing field 'key'")
        return cls(d["key"], read_field(d, "first_call", int), read_field(d, "calls", int))


@dataclass(frozen=True)
class Workload(Paths):
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
        caller: The calling workload's row in the test's workloads, or None for a root.
        structure_hash: The module tree's hash (see ``structure_hash``).
        input_signature: The call's arguments as described (shapes, dtypes, values).
        hash: The workload hash, SHA-256 of (scheme, structure hash, input signature).
        calls: How many calls ran it.
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
        computation: The operations themselves, in this process only (the snapshot stores
            them, the JSON report only their hash).
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
    class_name: str
    depth: int
    parent: str | None
    structure_hash: str
    input_signature: InputSignature
    hash: str
    calls: int
    params: ParamStats
    arg_names: tuple[str, ...] = ()
    location: str | None = None
    total_time_s: float | None = None
    submodules: tuple[tuple[str, str], ...] = ()
    user_keys: tuple[UserKey, ...] = ()
    timing: Timing | None = None
    flops: int | None = None
    peak_memory_bytes: int | None = None
    output_signature: Json = None
    caller: int | None = None
    structure_hash_without_dtypes: str | None = None
    measured: Measured | None = None
    compute_hash: str | None = None
    data_dependent: bool = False
    compute_unknown: str | None = None
    compute_partial: str | None = None
    computation: Computation | None = field(default=None, compare=False, repr=False)
    costs: Costs | None = None
    paths: tuple[str, ...] = ()
    compile_health: CompileHealth | None = None
    compile_readiness: Readiness | None = None

    @property
    def key(self) -> list[Json]:
        """``[structure_hash, args, kwargs]``: the workload's identity with its structure kept
        apart from its inputs, as ``distance_factor`` and the JSON report's ``key`` take it."""
        return workload_key(self.structure_hash, self.input_signature)

    @property
    def user_key(self) -> Json:
        """The first user key of this workload, or None when no hook keyed it."""
        return self.user_keys[0].key if self.user_keys else None

    def to_dict(self) -> dict[str, Json]:
        """The workload as the JSON report holds it."""
        return {
            "name": self.name,
            "paths": list(self.patterns),
            "class": self.class_name,
            "depth": self.depth,
            "parent": self.parent,
            "caller": self.caller,
            "structure_hash": self.structure_hash,
            "structure_hash_without_dtypes": self.structure_hash_without_dtypes,
            "input_signature": self.input_signature.to_dict(),
            "input": self.input_signature.format(),
            "key": self.key,
            "hash": self.hash,
            "calls": self.calls,
            "params": self.params.to_dict(),
            "arg_names": list(self.arg_names),
            "location": self.location,
            "total_time_s": self.total_time_s,
            "submodules": dict(self.submodules),
            "user_keys": [k.to_dict() for k in self.user_keys],
            "timing": None if self.timing is None else self.timing.to_dict(),
            "flops": self.flops,
            "peak_memory_bytes": self.peak_memory_bytes,
            "output_signature": self.output_signature,
            "measured": None if self.measured is None else self.measured.to_dict(),
            "compute_hash": self.compute_hash,
            "data_dependent": self.data_dependent,
            "compute_unknown": self.compute_unknown,
            "compute_partial": self.compute_partial,
            "costs": None if self.costs is None else self.costs.to_dict(),
            "compile": None if self.compile_health is None else self.compile_health.to_dict(),
            "compile_readiness": (
                None if self.compile_readiness is None else self.compile_readiness.to_dict()
            ),
        }

    @classmethod
    def from_dict(cls, data: object) -> Workload:
        """The workload from parsed JSON; malformed data raises ``WorkloadError``."""
        d = read_object(data, "workload")
        identity = read_identity(d)
        key = workload_key(identity["structure_hash"], identity["input_signature"])
        if "key" in d and canonical_json(d["key"]) != canonical_json(key):
            raise WorkloadDataError(
                "field 'key' is not [structure_hash, args, kwargs] of its own structure_hash "
                "and input_signature"
            )
        return cls(
            **identity,
            calls=read_count(d, "calls", 1),
            params=ParamStats.from_dict(d.get("params")),
            location=read_field(d, "location", str, optional=True),
            total_time_s=read_field(d, "total_time_s", float, int, optional=True),
            user_keys=tuple(
                UserKey.from_dict(k) for k in read_field(d, "user_keys", list, optional=True) or ()
            ),
            timing=None if d.get("timing") is None else Timing.from_dict(d["timing"]),
            flops=read_count(d, "flops", 0, optional=True),
            peak_memory_bytes=read_count(d, "peak_memory_bytes", 0, optional=True),
            output_signature=d.get("output_signature"),
            caller=read_field(d, "caller", int, optional=True),
            measured=None if d.get("measured") is None else Measured.from_dict(d["measured"]),
            compute_hash=read_field(d, "compute_hash", str, optional=True),
            data_dependent=read_field(d, "data_dependent", bool, optional=True) or False,
            compute_unknown=read_field(d, "compute_unknown", str, optional=True),
            compute_partial=read_field(d, "compute_partial", str, optional=True),
            costs=None if d.get("costs") is None else Costs.from_dict(d["costs"]),
            **read_compile_fields(d),
        )


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
        nodeid: The test's pytest node id.
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
        """The rows ``parent`` (one of this table's rows, or a row equal to it) called."""
        row = self._rows.get(id(parent))
        if row is None:
            row = self.workloads.index(parent)
        return tuple(w for w in self.workloads if w.caller == row)

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
        workloads = []
        for row, data in enumerate(read_field(d, "workloads", list)):
            try:
                workloads.append(Workload.from_dict(data))
            except WorkloadDataError as exc:
                raise WorkloadDataError(f"test {nodeid!r}, workload {row}: {exc}") from None
        check_links(workloads, f"test {nodeid!r}")
        for row, w in enumerate(workloads):
            if w.parent is not None and w.caller is None:
                raise WorkloadDataError(f"test {nodeid!r}, workload {row}: no 'caller'")
        libraries = read_field(d, "libraries", dict, optional=True) or {}
        if not all(isinstance(v, str) for v in libraries.values()):
            raise WorkloadDataError(f"test {nodeid!r}: libraries must map names to versions")
        fixtures = read_field(d, "fixtures", list, optional=True) or []
        if not all(isinstance(f, str) for f in fixtures):
            raise WorkloadDataError(f"test {nodeid!r}: fixtures must be a list of names")
        return cls(
            nodeid=nodeid,
            workloads=tuple(workloads),
            modules=closure(table or {}, (w.structure_hash for w in workloads)),
            libraries=libraries,
            fixtures=tuple(fixtures),
        )
