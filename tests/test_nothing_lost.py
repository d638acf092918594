"""What an update never deletes or rewrites: a run cut short by two Ctrl-C, a test that did not
run (deselected, an error in setup) or erred in teardown, a snapshot directory that leads out
of the rootdir."""

from __future__ import annotations

import pytest

from tests.pytester_suite import SUITE_INI, two_shapes

UPDATE = ("--workload-snapshot", "--snapshot-update")

#: Six tests, each with its own snapshot; the first sends its process a real SIGINT when the
#: file ``interrupt`` exists.
SIX = """
@pytest.mark.workloads
@pytest.mark.parametrize("n", range(6))
def test_six(n):
    import os, signal
    nn.Linear(2, n + 1)(torch.rand(1, 2))
    if n == 0 and os.path.exists("interrupt"):
        os.kill(os.getpid(), signal.SIGINT)
"""

#: The second Ctrl-C, a real SIGINT too, while pytest handles the first: pytest then finishes
#: the session with status OK.
SECOND_CTRL_C = """
import os, signal

# Ctrl-C in a terminal, even where this suite runs as a shell's background job (which ignores
# SIGINT, and so would pytest's process)
signal.signal(signal.SIGINT, signal.default_int_handler)

def pytest_keyboard_interrupt(excinfo):
    os.kill(os.getpid(), signal.SIGINT)
"""


def _snapshots(pytester: pytest.Pytester) -> dict[str, bytes]:
    folder = pytester.path / "__workload_snapshots__"
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*.*"))}


def test_two_ctrl_c_during_an_update_delete_no_snapshot(pytester, suite):
    suite(SIX)
    pytester.runpytest(*UPDATE, "-p", "no:xdist").assert_outcomes(passed=6)
    old = _snapshots(pytester)
    assert len(old) == 6
    pytester.makeconftest(SECOND_CTRL_C)
    (pytester.path / "interrupt").touch()
    result = pytester.runpytest_subprocess(*UPDATE, "-p", "no:xdist", "-p", "no:randomly")
    result.stdout.no_fnmatch_line("*unused snapshot* deleted*")
    result.stdout.fnmatch_lines(
        ["pytest-workload: no snapshot was deleted as unused: the run was cut short"]
    )
    assert _snapshots(pytester) == old


TWO = """
@pytest.mark.workloads
def test_kept():
    nn.Linear(2, 3)(torch.rand(1, 2))


@pytest.mark.slow
@pytest.mark.workloads
def test_skipped_by_selection():
    nn.Linear(2, 4)(torch.rand(1, 2))
"""


@pytest.mark.parametrize(
    "select",
    [
        ("-k", "not selection"),
        ("-m", "not slow"),
        ("--deselect", "test_models.py::test_skipped_by_selection"),
    ],
    ids=["keyword", "marker", "deselect"],
)
@pytest.mark.parametrize("xdist", [("-p", "no:xdist"), ("-n", "2")], ids=["serial", "n2"])
def test_a_deselected_test_keeps_its_snapshot(pytester, suite, select, xdist):
    suite(TWO)
    pytester.makeini(SUITE_INI + "markers =\n    slow\n")
    pytester.runpytest(*UPDATE, "-p", "no:xdist").assert_outcomes(passed=2)
    old = _snapshots(pytester)
    result = pytester.runpytest(*UPDATE, *xdist, *select)
    assert result.parseoutcomes()["passed"] == 1  # (xdist's controller counts no deselected)
    result.stdout.fnmatch_lines(
        [
            "pytest-workload: no snapshot was deleted as unused: 1 collected test did not run "
            "(deselected, or an error in setup)"
        ]
    )
    assert _snapshots(pytester) == old


ERRORS = """
import os


@pytest.fixture
def broken_setup():
    if os.path.exists("break"):
        raise RuntimeError("setup broke")


@pytest.fixture
def broken_teardown():
    yield
    if os.path.exists("break"):
        raise RuntimeError("teardown broke")


@pytest.mark.workloads
def test_setup_error(broken_setup):
    nn.Linear(2, SIZE)(torch.rand(1, 2))


@pytest.mark.workloads
def test_teardown_error(broken_teardown):
    nn.Linear(2, SIZE)(torch.rand(1, 2))
"""


@pytest.mark.parametrize("xdist", [("-p", "no:xdist"), ("-n", "2")], ids=["serial", "n2"])
def test_an_error_in_setup_or_teardown_neither_loses_nor_rewrites_a_snapshot(
    pytester, suite, xdist
):
    suite(ERRORS.replace("SIZE", "3"))
    pytester.runpytest(*UPDATE, "-p", "no:xdist").assert_outcomes(passed=2)
    old = _snapshots(pytester)
    suite(ERRORS.replace("SIZE", "5"))  # both changed: an update would rewrite them
    (pytester.path / "break").touch()
    result = pytester.runpytest(*UPDATE, *xdist)
    result.assert_outcomes(passed=1, errors=2)
    assert _snapshots(pytester) == old
    result.stdout.fnmatch_lines(
        [
            "*workload snapshot __workload_snapshots__/test_models/test_teardown_error.workloads "
            "kept as it was: the test erred in teardown*",
            "pytest-workload: no snapshot was deleted as unused: 1 collected test did not run "
            "(deselected, or an error in setup)",
        ],
        consecutive=False,
    )


def _baselines(pytester: pytest.Pytester) -> dict[str, bytes]:
    folder = pytester.path / "__workload_baselines__"
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*.json"))}


@pytest.mark.parametrize("xdist", [("-p", "no:xdist"), ("-n", "2")], ids=["serial", "n2"])
def test_an_error_in_teardown_leaves_the_timing_baselines_as_they_were(
    pytester, suite, injected, xdist
):
    # (strict: xdist workers write baselines only so)
    update = (*UPDATE, "-o", "workload_perf=strict")
    suite(ERRORS.replace("SIZE", "3"))
    pytester.runpytest(*update, "-p", "no:xdist").assert_outcomes(passed=2)
    old = _baselines(pytester)
    assert len(old) == 2
    (pytester.path / "break").touch()
    injected(0.02)  # every timing changed: an update would rewrite both baselines
    result = pytester.runpytest(*update, *xdist)
    result.assert_outcomes(passed=1, errors=2)
    assert _baselines(pytester) == old
    result.stdout.fnmatch_lines(
        ["*test_teardown_error: timing baseline * kept as it was: the test erred in teardown"]
    )
    suite(ERRORS.replace("SIZE", "5"))  # a new workload: its baseline is not written
    pytester.runpytest(*update, *xdist).assert_outcomes(passed=1, errors=2)
    assert _baselines(pytester) == old


def test_an_error_in_teardown_writes_no_new_snapshot(pytester, suite):
    suite(ERRORS.replace("SIZE", "3"))
    (pytester.path / "break").touch()
    pytester.runpytest(*UPDATE, "-p", "no:xdist").assert_outcomes(passed=1, errors=2)
    assert _snapshots(pytester) == {}


def test_an_update_deletes_nothing_through_a_symlink_out_of_the_rootdir(
    pytester, suite, tmp_path_factory
):
    outside = tmp_path_factory.mktemp("outside")
    precious = outside / "test_models" / "precious.workloads"
    precious.parent.mkdir()
    precious.write_text("{}")
    (pytester.path / "__workload_snapshots__").symlink_to(outside, target_is_directory=True)
    suite(two_shapes())
    result = pytester.runpytest(*UPDATE, "-p", "no:xdist")
    result.assert_outcomes(failed=1)  # nothing is written there either
    result.stdout.fnmatch_lines(
        [
            f"pytest-workload: no snapshot was deleted as unused: "
            f"{pytester.path / '__workload_snapshots__'} leads to {outside}, outside the rootdir "
            f"{pytester.path}"
        ]
    )
    result.stdout.no_fnmatch_line("*Deleted*")
    assert precious.read_text() == "{}"
