import dataclasses

import pytest
import torch

from pytest_workload import TestWorkloads, WorkloadRecorder
from pytest_workload._core.errors import WorkloadDataError
from pytest_workload._core.strict_json import load_json
from pytest_workload._core.text import prefix_length
from pytest_workload._report.collapse import KeyChecks, render_collapse
from pytest_workload._report.summary import render_report, render_session
from pytest_workload._snapshot.diff import compare_tables, explain, tables_match
from pytest_workload._snapshot.snapshot_files import snapshot_text
from tests.models import TinyNet, twins


def recorded(calls, nodeid="t.py::test", max_depth=0, timing=True, keyer=None):
    recorder = WorkloadRecorder(nodeid, max_depth=max_depth, timing=timing, keyer=keyer)
    with recorder.recording(all_roots=True):
        calls()
    return recorder.workloads()


def test_distinct_workloads_under_one_hash_collapse_across_tests():
    model = TinyNet().eval()
    a = recorded(lambda: model(torch.rand(1, 3, 8, 8)), "a.py::test_a")
    b = recorded(lambda: model(torch.rand(1, 3, 16, 16)), "b.py::test_b")
    forged = TestWorkloads(
        b.nodeid, (dataclasses.replace(b.workloads[0], hash=a.workloads[0].hash),)
    )
    checks = KeyChecks()
    assert checks.check(a) == []
    assert checks.check(a) == []  # the same workload again
    (collapse,) = checks.check(forged)
    assert collapse.kind == "hash collapse"
    message = render_collapse(collapse)
    assert message.startswith("workload hash collapse: two distinct workloads share the hash")
    assert "a.py::test_a: model (tests.models.TinyNet), input (float32[1, 3, 8, 8])" in message
    assert "b.py::test_b: model (tests.models.TinyNet), input (float32[1, 3, 16, 16])" in message
    assert checks.check(forged) == []  # reported once


def weight_key(module, args, kwargs):
    """The classic bug: a key made from the weights."""
    return float(sum(p.detach().sum() for p in module.parameters()))


def test_weight_key_collapses_shapes_and_is_unstable_over_reinit():
    torch.manual_seed(0)
    model = TinyNet().eval()
    two_shapes = recorded(
        lambda: [model(torch.rand(1, 3, 8, 8)), model(torch.rand(1, 3, 16, 16))], keyer=weight_key
    )
    checks = KeyChecks()
    (collapse,) = checks.check(two_shapes)
    assert collapse.kind == "user key collapse"
    assert render_collapse(collapse).startswith("user key collapse: two distinct workloads share")

    torch.manual_seed(1)
    reinit = TinyNet().eval()
    again = recorded(lambda: reinit(torch.rand(1, 3, 8, 8)), nodeid="t.py::other", keyer=weight_key)
    (unstable,) = checks.check(again)
    assert unstable.kind == "unstable user key"
    message = render_collapse(unstable)
    assert message.splitlines()[0] == (
        "unstable user key: one workload got different keys from pytest_workload_key:"
    )
    assert "t.py::test, call 1: " in message and "t.py::other, call 1: " in message


def test_unstable_within_one_test_names_the_calls():
    model = TinyNet().eval()
    calls = iter(range(10))
    table = recorded(
        lambda: [model(torch.rand(1, 3, 8, 8)) for _ in range(3)],
        keyer=lambda m, a, k: next(calls) // 2,
    )
    (workload,) = table.workloads
    assert [(k.key, k.first_call, k.calls) for k in workload.user_keys] == [(0, 1, 2), (1, 3, 1)]
    (unstable,) = KeyChecks().check(table)
    assert "t.py::test, call 1: 0" in render_collapse(unstable)
    assert "t.py::test, call 3: 1" in render_collapse(unstable)


def test_prefix_lengthens_only_where_hashes_share_one():
    assert prefix_length(["abcdef0123", "0123456789"]) == 8
    assert prefix_length(["abcdef0123", "abcdef0199"]) == 9
    assert prefix_length(["abcdef0123", "abcdef0123"]) == 8


def test_report_tree_shows_the_fields_of_each_workload():
    model = TinyNet().eval()
    table = recorded(lambda: [model(torch.rand(1, 3, 8, 8)) for _ in range(2)], max_depth=1)
    lines = render_session([table])
    assert lines[0] == "t.py::test"
    assert lines[1].startswith("    model (executed 2× – ")
    text = "\n".join(lines)
    for field in (
        "Class:       TinyNet (tests.models.TinyNet)",
        "Parameters:  ",
        "Location:    ",
        "Input:       (float32[1, 3, 8, 8])",
        f"Hash:        {table.workloads[0].hash[:8]}",
    ):
        assert field in text
    assert "            stem (executed 2× – " in text


def test_report_without_timing_shows_counts_only():
    model = TinyNet().eval()
    lines = render_session([recorded(lambda: model(torch.rand(1, 3, 8, 8)), timing=False)])
    assert lines[1] == "    model (executed 1×)"


def twins_table() -> TestWorkloads:
    model = twins()
    return recorded(lambda: model(torch.rand(2, 4)), max_depth=2, timing=False)


def test_report_tree_shows_each_child_once_under_its_caller():
    lines = render_session([twins_table()])
    tree = [line.split(" (executed")[0] for line in lines if "(executed" in line]
    assert tree == [
        "    model",
        "            a, b",
        "                    a.0, b.0",
        "                    a.1, b.1",
    ]
    assert "            a, b (executed 2×)" in lines


def test_callers_and_paths_survive_json_and_a_row_without_its_caller_is_refused():
    table = twins_table()
    data = table.to_dict()
    assert [w["caller"] for w in data["workloads"]] == [None, 0, 1, 1]
    assert [w["paths"] for w in data["workloads"]] == [
        ["model"],
        ["a", "b"],
        ["a.0", "b.0"],
        ["a.1", "b.1"],
    ]
    copy = TestWorkloads.from_dict(data)
    assert copy == table
    assert table.children(copy.workloads[1]) == table.children(table.workloads[1])
    del data["workloads"][2]["caller"]
    with pytest.raises(WorkloadDataError, match="workload 2: no 'caller'"):
        TestWorkloads.from_dict(data)


@pytest.mark.parametrize("caller", [1, 5, -1])
def test_a_caller_must_be_an_earlier_row(caller):
    data = twins_table().to_dict()
    data["workloads"][1]["caller"] = caller
    with pytest.raises(WorkloadDataError, match=f"workload 1: caller {caller} is not an earlier"):
        TestWorkloads.from_dict(data)


def test_snapshot_of_identical_siblings_matches_itself_only():
    full = twins_table().folded()
    assert [e.label for e in full] == ["model", "a, b", "a.0, b.0", "a.1, b.1"]
    assert tables_match(full, twins_table().folded())
    assert compare_tables(full, twins_table().folded()) == []
    a0 = dataclasses.replace(full.workloads[2], paths=("a.0",))
    missing_b0 = dataclasses.replace(full, workloads=(*full.workloads[:2], a0, full.workloads[3]))
    assert not tables_match(full, missing_b0)
    ((old, new),) = compare_tables(full, missing_b0)
    assert old is not None and new is not None and new.label == "a.0"
    assert explain(old, new, full, missing_b0) == ["paths a.0, b.0 -> a.0"]


class Wrap(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x)


def tree(table: TestWorkloads, rows) -> list:
    return [(w.label, tree(table, table.children(w))) for w in rows]


def test_a_table_read_from_its_snapshot_walks_as_the_folded_one():
    """A snapshot folds rows that only their callers' rows told apart (one ``lin`` under two
    ``Wrap`` rows of one hash) and keeps no caller: its rows are linked by hash and depth."""
    a, b = torch.nn.Sequential(Wrap()), torch.nn.Sequential(Wrap(), torch.nn.ReLU())
    model = torch.nn.Sequential(a, b)
    table = recorded(lambda: model(torch.rand(2, 4)), max_depth=3, timing=False)
    assert [w.label for w in table if w.class_name.endswith("Linear")] == ["0.0.lin", "1.0.lin"]
    read = TestWorkloads.from_snapshot(load_json(snapshot_text(table)))
    assert read.nodeid == "" and all(w.caller is None for w in read)
    lin = ("[0-1].0.lin", [])
    walked = [("model", [("0", [("0.0", [lin])]), ("1", [("1.0", [lin]), ("1.1", [])])])]
    assert tree(read, read.roots()) == tree(table.folded(), table.folded().roots()) == walked
    assert tree(table, table.roots())[0][1][0] == ("0", [("0.0", [("0.0.lin", [])])])
    rebuilt = [dataclasses.replace(w) for w in table.folded()]
    assert [(w.input, w.key, w.label) for w in rebuilt] == [
        (w.input, w.key, w.label) for w in table.folded()
    ]


def test_a_long_tree_folds_in_auto_mode_and_shows_whole_in_tree_mode():
    layers = [torch.nn.Sequential(torch.nn.Linear(4 + i, 5 + i)) for i in range(12)]
    model = torch.nn.Sequential(*layers)  # distinct layers: no two share one tree entry
    table = recorded(lambda: model(torch.rand(2, 4)), max_depth=2, timing=False)
    assert len(table.workloads) == 25
    whole = render_session([table])
    folded = render_session([table], fold=40)
    assert len(whole) > 150
    assert 40 < len(folded) < 50
    assert folded[:-1] == whole[: len(folded) - 1]
    shown = sum(1 for line in folded if "(executed" in line)
    assert folded[-1] == (
        f"    … {25 - shown} more workloads of this test: --workload-report=tree shows every "
        "one, --workload-json=PATH every field"
    )


@pytest.mark.parametrize("gated", [True, False])
def test_the_counts_of_a_session_that_recorded_nothing_are_no_lines(gated):
    empty = [TestWorkloads("t.py::unrecorded", ())]
    counts = {"collapses": 0, "gated": gated, "failed": 0, "regressions": 0}
    assert render_report(empty, "summary", **counts) == []
    assert render_report(empty, "tree", **counts) == []
