"""The failure text of a collapse: two workloads that share a hash or a user key, or one
workload whose user key is unstable."""

from __future__ import annotations

from .._core.strict_json import Json
from .._core.text import one_line, prefix_length, short
from .._snapshot import format_key
from .._workload.workload import Workload
from .collapse import Collapse


def _describe(w: Workload) -> str:
    return one_line(f"{w.label} ({w.class_name}), input {w.input_signature.format()}")


def _key(key: Json) -> str:
    return one_line(format_key(key))


def render_collapse(collapse: Collapse) -> str:
    """The failure text of a hash collapse, a user key collapse or an unstable user key."""
    a, b = collapse.first, collapse.second
    if collapse.kind == "unstable user key":
        assert a.user_key is not None and b.user_key is not None
        return "\n".join(
            [
                "unstable user key: one workload got different keys from pytest_workload_key:",
                f"  workload: {_describe(a.workload)}, hash {short(a.workload.hash)}",
                f"  - {one_line(a.nodeid)}, call {a.user_key.first_call}: {_key(a.user_key.key)}",
                f"  - {one_line(b.nodeid)}, call {b.user_key.first_call}: {_key(b.user_key.key)}",
            ]
        )
    if collapse.kind == "user key collapse":
        assert a.user_key is not None
        head = f"user key collapse: two distinct workloads share the key {_key(a.user_key.key)}"
        n = prefix_length([a.workload.hash, b.workload.hash])
        rows = [
            f"  - {one_line(s.nodeid)}: {_describe(s.workload)}, hash {short(s.workload.hash, n)}"
            for s in (a, b)
        ]
    else:
        head = f"workload hash collapse: two distinct workloads share the hash {a.workload.hash}"
        n = prefix_length([a.workload.structure_hash, b.workload.structure_hash])
        rows = [
            f"  - {one_line(s.nodeid)}: {_describe(s.workload)}, "
            f"structure {short(s.workload.structure_hash, n)}"
            for s in (a, b)
        ]
    return "\n".join([head, *rows])
