"""What the end of a run says about workload snapshots: one line says how many were not
checked. Under the gate syrupy counts those used as they are as passed; without it, none is
asserted, so syrupy counts none."""

from __future__ import annotations

import fnmatch
import json

from tests.pytester_suite import lit, two_shapes

NOT_CHECKED = (
    "1 workload snapshot not checked: workload snapshots are checked only with --workload-snapshot"
)


def _stored(pytester, name="test_two_shapes"):
    return pytester.path / "__workload_snapshots__" / "test_models" / f"{name}.workloads"


def test_a_shape_change_without_the_gate_is_said_not_checked(pytester, suite, mode):
    suite(two_shapes())
    pytester.runpytest(*mode, "--workload-snapshot", "--snapshot-update").assert_outcomes(passed=1)
    suite(two_shapes(size=12))
    result = pytester.runpytest(*mode)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([NOT_CHECKED])
    result.stdout.no_fnmatch_line("*snapshot* passed*")  # (syrupy compared none)
    assert result.ret == 0


def test_a_deleted_snapshot_without_the_gate_is_not_reported(pytester, suite, mode):
    suite(two_shapes() + two_shapes().replace("test_two_shapes", "test_other"))
    pytester.runpytest(*mode, "--workload-snapshot", "--snapshot-update").assert_outcomes(passed=2)
    _stored(pytester, "test_other").unlink()
    result = pytester.runpytest(*mode)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([NOT_CHECKED])
    result.stdout.no_fnmatch_line("*snapshot* passed*")
    assert not _stored(pytester, "test_other").exists()


def test_snapshot_update_alone_says_it_writes_no_workload_snapshot(pytester, suite, mode):
    suite(two_shapes() + two_shapes().replace("test_two_shapes", "test_other"))
    pytester.runpytest(*mode, "--workload-snapshot", "--snapshot-update").assert_outcomes(passed=2)
    text = _stored(pytester).read_text()
    _stored(pytester, "test_other").unlink()
    suite(two_shapes(size=12) + two_shapes().replace("test_two_shapes", "test_other"))
    result = pytester.runpytest(*mode, "--snapshot-update")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        lit(
            "--snapshot-update wrote no workload snapshot: they are written only with "
            "--workload-snapshot; run `pytest --workload-snapshot --snapshot-update`; "
            "1 workload snapshot left as it is"
        )
    )
    result.stdout.no_fnmatch_line("*snapshot* passed*")
    result.stdout.no_fnmatch_line("*snapshot* generated*")
    result.stdout.no_fnmatch_line("*snapshot* deleted*")
    assert _stored(pytester).read_text() == text
    assert not _stored(pytester, "test_other").exists()


def test_with_the_gate_a_failed_test_s_snapshot_is_said_not_checked(pytester, suite, mode):
    body = two_shapes() + two_shapes().replace("test_two_shapes", "test_other")
    suite(body)
    pytester.runpytest(*mode, "--workload-snapshot", "--snapshot-update").assert_outcomes(passed=2)
    suite(
        body.replace(
            "model(torch.rand(1, 3, 8, 8))\n",
            "model(torch.rand(1, 3, 8, 8))\n    assert False\n",
            1,
        )
    )
    result = pytester.runpytest(*mode, "--workload-snapshot")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "2 snapshots passed.",
            "1 workload snapshot not checked (syrupy counts it as passed): its test failed",
        ]
    )


NOTES = """
import pytest
import torch
from torch import nn


@pytest.mark.parametrize("i", range(3))
@pytest.mark.workloads
def test_linear(i):
    nn.Linear(4, 2)(torch.rand(1, 4))


@pytest.mark.workloads
def test_linear_named():
    first = nn.Linear(4, 2)  # the same workload under another name: still one note
    first(torch.rand(1, 4))


@pytest.mark.parametrize("i", range(2))
@pytest.mark.workloads
def test_conv(i):
    nn.Conv2d(3, 2, 1)(torch.rand(1, 3, 4, 4))
"""


def test_a_note_is_counted_once_per_workload_and_each_is_in_the_json(pytester, mode):
    pytester.makeini("[pytest]\nworkload_time_budget = 0.01\n")
    pytester.makepyfile(test_notes=NOTES)
    result = pytester.runpytest(
        *mode, "--workload-snapshot", "--workload-perf=strict", "--workload-json=r.json"
    )
    result.assert_outcomes(failed=6)  # no snapshots yet; the perf gate still runs
    command = "`pytest --workload-snapshot --snapshot-update -p no:xdist`"
    result.stdout.fnmatch_lines(
        [
            "*- workload performance -*",
            f"2 workloads without a timing baseline: record them with {command}",
            'each note, with its test and workload: the JSON report ("notes")',
        ]
    )
    result.stdout.no_fnmatch_line("*no timing baseline for*")
    notes = json.loads((pytester.path / "r.json").read_text())["notes"]
    assert [n["nodeid"] for n in notes] == [
        "test_notes.py::test_linear[0]",
        "test_notes.py::test_linear[1]",
        "test_notes.py::test_linear[2]",
        "test_notes.py::test_linear_named",
        "test_notes.py::test_conv[0]",
        "test_notes.py::test_conv[1]",
    ]
    assert {n["kind"] for n in notes} == {"no baseline"}
    linear, conv = notes[0]["text"], notes[4]["text"]
    assert fnmatch.fnmatch(
        linear,
        lit(
            "no timing baseline for torch.nn.modules.linear.Linear, input (float32[1, 4]), "
            f"hash * on cpu *; record one with {command}"
        )[0],
    )
    assert {n["text"] for n in notes} == {linear, conv}


def test_the_missing_baseline_line_counts_workloads_not_texts(pytester, injected):
    pytester.makeini("[pytest]\nworkload_time_budget = 0.01\n")
    pytester.makepyfile(test_notes=NOTES)
    gate = ("-p", "no:xdist", "--workload-snapshot")
    pytester.runpytest(*gate, "--snapshot-update").assert_outcomes(passed=6)
    # the Linear of one test has a baseline of another computation, the other tests none: its
    # note names that computation, and is another text for the same workload
    for path in (pytester.path / "__workload_baselines__").rglob("*.json"):
        stored = json.loads(path.read_text())
        if stored["test"] == "test_notes.py::test_linear[0]":
            path.write_text(json.dumps({**stored, "flops": stored["flops"] + 1}))
        else:
            path.unlink()
    result = pytester.runpytest(*gate, "--workload-json=r.json")
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines(["2 workloads without a timing baseline: record them with `*`"])
    notes = json.loads((pytester.path / "r.json").read_text())["notes"]
    assert len({n["text"] for n in notes}) == 3
