"""Module descriptions stored once (snapshot and report), field-level explanations from them,
what counts as an upgrade, and the library versions beside them."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch
from torch import nn

from pytest_workload import TestWorkloads, structure_hash
from pytest_workload._core.errors import WorkloadDataError
from pytest_workload._core.strict_json import load_json
from pytest_workload._core.text import versions_line
from pytest_workload._report.compare import (
    compare_reports,
    render_comparison,
    render_comparison_markdown,
)
from pytest_workload._report.session_report import SessionReport
from pytest_workload._snapshot.diff import compare_tables, explain
from pytest_workload._snapshot.part_diff import field_changes, grouped_lines, own_changes
from pytest_workload._snapshot.snapshot_files import snapshot_text
from pytest_workload._snapshot.verdict import upgrade_refusals
from pytest_workload._workload.modules import description_hash, read_modules
from tests.recording import record


def deep(blocks: int = 20, **bn) -> nn.Module:
    model = nn.Sequential(
        *[nn.Sequential(nn.Conv2d(4, 4, 1), nn.BatchNorm2d(4, **bn)) for _ in range(blocks)]
    )
    return model.eval()


def table(model: nn.Module, max_depth: int = 0):
    return record(lambda: model(torch.rand(1, 4, 4, 4)), max_depth=max_depth, timing=False)


def document(model: nn.Module, max_depth: int = 0) -> TestWorkloads:
    return table(model, max_depth).folded()


def test_each_distinct_description_is_stored_once_whatever_the_tree_size():
    small, large = document(deep(2)), document(deep(20))
    # root, one block, its conv and its norm: the root differs, the block is shared
    assert len(small.modules) == len(large.modules) == 4
    assert all(description_hash(d) == k for k, d in large.modules.items())
    assert large.workloads[0].structure_hash in large.modules


def test_every_row_s_tree_is_described_when_submodules_were_hashed_first():
    """Recorded submodules complete before their root and share its call's memo, so the root's
    hash reuses theirs: the descriptions still cover every row's whole tree, on every call."""
    model = nn.Sequential(deep(2), nn.Sequential(deep(1), nn.ReLU()))
    t = record(lambda: [model(torch.rand(1, 4, 4, 4)) for _ in range(3)], max_depth=1, timing=False)
    distinct = {structure_hash(m) for m in model.modules()}
    assert set(t.modules) == distinct
    assert {w.structure_hash for w in t.workloads} <= distinct
    read_modules(json.loads(json.dumps(dict(t.modules))))  # (every child it names is there)


def test_a_snapshot_keeps_descriptions_and_libraries_through_its_text():
    doc = document(deep(3))
    back = TestWorkloads.from_snapshot(load_json(snapshot_text(doc)))
    assert back.modules == doc.modules
    assert back.libraries == doc.libraries and "torch" in back.libraries


def test_a_report_stores_each_description_once_for_all_its_tests():
    a, b = table(deep(3)), dataclasses.replace(table(deep(3)), nodeid="u")
    report = SessionReport(scheme=1, tests=(dataclasses.replace(a, nodeid="t"), b))
    data = report.to_dict()
    assert "modules" not in data["tests"][0] and len(data["modules"]) == 4
    back = SessionReport.from_dict(json.loads(json.dumps(data)))
    assert [t.modules for t in back.tests] == [a.modules, a.modules]
    assert back.tests[0].libraries == a.libraries


def test_an_edited_description_or_a_missing_child_is_refused():
    stored = json.loads(json.dumps(document(deep(2)).to_snapshot()["modules"]))
    edited = dict(stored)
    key = next(iter(edited))
    edited[key] = {**edited[key], "config": "edited"}
    with pytest.raises(WorkloadDataError, match="does not hash to its key"):
        read_modules(edited)
    root = next(k for k, d in stored.items() if len(d["children"]) == 2)
    with pytest.raises(WorkloadDataError, match="has no stored description"):
        read_modules({root: stored[root]})


def test_changed_fields_are_named_and_grouped_across_modules():
    old, new = document(deep(20)), document(deep(20, momentum=0.2))
    changes = field_changes(
        old.modules,
        new.modules,
        old.workloads[0].structure_hash,
        new.workloads[0].structure_hash,
        "",
    )
    assert changes is not None
    lines = grouped_lines(changes, "model")
    # no extra_repr text enters a hash, so the attribute is the one changed field
    assert lines == ["BatchNorm2d attribute momentum 0.1 -> 0.2 (20 modules: 0.1, 1.1, 2.1, ...)"]
    ((a, b),) = compare_tables(old, new)
    assert lines[0] in explain(a, b, old, new)


def test_own_changes_name_each_kind_of_field():
    a = {
        "class": "x.A",
        "attributes": {"p": 1, "gone": 2},
        "training": False,
        "parameters": [["weight", [4, 4], "float32"], ["bias", [4], "float32"]],
        "buffers": [],
        "children": [],
    }
    b = {
        **a,
        "class": "y.A",
        "attributes": {"p": 2, "new": True},
        "training": True,
        "parameters": [["weight", [8, 4], "float32"], ["scale", [1], "float16"]],
    }
    assert own_changes(a, b) == [
        "class x.A -> y.A",
        "attribute gone removed (was 2)",
        "attribute new added: true",
        "attribute p 1 -> 2",
        "mode eval -> train",
        "parameter weight shape [4, 4] -> [8, 4]",
        "parameter bias removed",
        'parameter scale added: [1] "float16"',
    ]


def test_without_descriptions_no_field_is_guessed():
    old, new = document(deep(2)), document(deep(2, momentum=0.2))
    bare = dataclasses.replace(old, modules={})
    h = (old.workloads[0].structure_hash, new.workloads[0].structure_hash)
    assert field_changes(bare.modules, new.modules, *h, "") is None
    ((a, b),) = compare_tables(bare, new)
    assert a is not None and b is not None
    assert not any("momentum" in d for d in explain(a, b, bare, new))


def test_an_upgrade_changes_only_wording():
    old, model = document(deep(3)), deep(3)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.variant = "b"  # a release adds an attribute the computation does not read
    reworded = document(model)
    assert reworded.workloads[0].hash != old.workloads[0].hash
    assert upgrade_refusals(old, reworded) == []
    assert upgrade_refusals(dataclasses.replace(old, modules={}), reworded)


def test_a_changed_shape_or_computation_is_no_upgrade():
    old = document(deep(3))
    wider = nn.Sequential(
        *[nn.Sequential(nn.Conv2d(4, 4, 3, padding=1), nn.BatchNorm2d(4)) for _ in range(3)]
    ).eval()
    refusals = upgrade_refusals(old, document(wider))
    assert any("parameters, buffers, children or train/eval mode changed" in r for r in refusals)
    assert any("computation changed" in r for r in refusals)  # (no FLOPs: timing off)
    eps = upgrade_refusals(old, document(deep(3, eps=1e-3)))
    assert len(eps) == 1 and "computation changed (compute hash" in eps[0]


def test_versions_are_named_in_one_line_only_when_they_differ():
    before = {"torch": "2.11.0", "timm": "1.0.20"}
    after = {"timm": "1.0.31", "torch": "2.12.1"}
    assert versions_line(before, after) == (
        "written with torch 2.11.0, timm 1.0.20; this run: torch 2.12.1, timm 1.0.31"
    )
    assert versions_line(before, dict(before)) is None
    assert versions_line({}, after) is None


def test_compare_names_the_versions_when_hashes_changed():
    base_test = dataclasses.replace(table(deep(2)), libraries={"torch": "2.11.0"})
    head_test = dataclasses.replace(table(deep(2, momentum=0.2)), libraries={"torch": "2.12.1"})
    same = compare_reports(
        SessionReport(1, tests=(base_test,)), SessionReport(1, tests=(base_test,))
    )
    assert same.libraries is None
    changed = compare_reports(
        SessionReport(1, tests=(base_test,)), SessionReport(1, tests=(head_test,))
    )
    assert changed.libraries == "written with torch 2.11.0; this run: torch 2.12.1"
    assert changed.libraries in render_comparison(changed)
    assert changed.libraries in render_comparison_markdown(changed)
