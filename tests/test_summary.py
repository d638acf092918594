"""What the end of a run says about workload snapshots: only checked ones count as passed."""

from __future__ import annotations

from tests.pytester_suite import lit, two_shapes

NOT_CHECKED = (
    "1 workload snapshot not checked: workload snapshots are checked only with --workload-snapshot"
)


def _stored(pytester, name="test_two_shapes"):
    return pytester.path / "__workload_snapshots__" / "test_models" / f"{name}.workloads"


def test_a_shape_change_without_the_gate_is_not_reported_as_passed(pytester, suite, mode):
    suite(two_shapes())
    pytester.runpytest(*mode, "--workload-snapshot", "--snapshot-update").assert_outcomes(passed=1)
    suite(two_shapes(size=12))
    result = pytester.runpytest(*mode)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([NOT_CHECKED])
    result.stdout.no_fnmatch_line("*snapshot* passed*")
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
            "--snapshot-update without --workload-snapshot: workload snapshots are written only "
            "with --workload-snapshot (`pytest --workload-snapshot --snapshot-update`); "
            "1 workload snapshot left as it is"
        )
    )
    result.stdout.no_fnmatch_line("*snapshot* passed*")
    result.stdout.no_fnmatch_line("*snapshot* generated*")
    assert _stored(pytester).read_text() == text
    assert not _stored(pytester, "test_other").exists()


def test_with_the_gate_a_failed_test_s_snapshot_is_not_counted_as_passed(pytester, suite, mode):
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
        ["1 snapshot passed.", "1 workload snapshot not checked: its test failed"]
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


def test_a_note_is_shown_once_per_workload_with_its_test_and_command(pytester, mode):
    pytester.makeini("[pytest]\nworkload_time_budget = 0.01\n")
    pytester.makepyfile(test_notes=NOTES)
    result = pytester.runpytest(*mode, "--workload-snapshot", "--workload-perf=strict")
    result.assert_outcomes(failed=6)  # no snapshots yet; the perf gate still runs
    command = "`pytest --workload-snapshot --snapshot-update -p no:xdist`"
    result.stdout.fnmatch_lines(
        lit(
            "*- workload performance -*",
            "test_notes.py::test_linear[0] (and 3 more tests): no timing baseline for "
            f"torch.nn.modules.linear.Linear, input (float32[1, 4]), hash * on cpu *; "
            f"record one with {command}",
            "test_notes.py::test_conv[0] (and 1 more test): no timing baseline for "
            f"torch.nn.modules.conv.Conv2d, input (float32[1, 3, 4, 4]), hash * on cpu *; "
            f"record one with {command}",
        )
    )
    assert result.stdout.str().count("no timing baseline") == 2
