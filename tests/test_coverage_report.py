"""End-to-end: what the terminal says about what the gate does not cover: a model run in a
fixture's setup, and a compute hash that stops at a data-dependent event."""

from __future__ import annotations

import json

import pytest

from tests.pytester_suite import SUITE_INI

IN_A_FIXTURE = """
import pytest
import torch


@pytest.mark.workloads
class TestOutput:
    @pytest.fixture(scope="class")
    def output(self):
        return torch.nn.Linear(4, 2)(torch.rand(3, 4))

    def test_shape(self, output):
        assert output.shape == (3, 2)

    def test_finite(self, output):
        assert torch.isfinite(output).all()


@pytest.mark.workloads
def test_own_call():
    torch.nn.Linear(4, 2)(torch.rand(3, 4))
"""


def test_tests_whose_model_ran_in_a_fixture_are_counted_and_told_how_to_cover_it(pytester):
    pytester.makeini(SUITE_INI)
    pytester.makepyfile(test_fixture=IN_A_FIXTURE)
    out = pytester.path / "r.json"
    # (-k: the fixture is set up by the selected test, not by the first of its class)
    result = pytester.runpytest("-p", "no:xdist", "-k", "finite or own", f"--workload-json={out}")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "pytest-workload: 1 recorded test uses a fixture that called a model in its setup "
            "(output): calls made outside the test's own call are not recorded; call the model in "
            "the test (the fixture can return the model and its inputs) to record and gate it"
        ]
    )
    tests = {t["nodeid"]: t for t in json.loads(out.read_text())["tests"]}
    assert tests["test_fixture.py::TestOutput::test_finite"]["fixtures"] == ["output"]
    assert "fixtures" not in tests["test_fixture.py::test_own_call"]
    result = pytester.runpytest("-p", "no:xdist")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["pytest-workload: 2 recorded tests use a fixture *(output)*"])


BRANCH = """
import pytest
import torch


class Guarded(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x)
        if y.abs().mean() > 10:
            return y
        return y.relu()


@pytest.mark.workloads
@pytest.mark.parametrize("n", [1, 2])
def test_guarded(n):
    Guarded()(torch.rand(n, 4))


@pytest.mark.workloads
def test_plain():
    torch.nn.Linear(4, 4)(torch.rand(1, 4))
"""


@pytest.mark.parametrize("mode", [("-p", "no:xdist"), ("-n", "2")], ids=["serial", "n2"])
def test_where_a_compute_hash_stops_is_said_per_test_and_counted(pytester, mode):
    pytester.makeini(SUITE_INI)
    pytester.makepyfile(test_branch=BRANCH)
    line = BRANCH.strip().splitlines().index("        if y.abs().mean() > 10:") + 1
    result = pytester.runpytest(*mode, "--workload-report=summary")
    result.assert_outcomes(passed=3)
    # the same line with and without xdist: the workloads xdist workers did not replay have a
    # line of their own, and one process would replay them
    result.stdout.fnmatch_lines(
        [
            "3 tests recorded 3 workloads (3 top-level, 3 distinct hashes); no collapse; "
            "2 tests with a compute hash that stops early (below) across the session",
            "*workload compute hash stops*",
            f"test_branch.py::test_guarded[[]1]: Guarded's compute hash covers 5 of 6 operations: "
            f"op 5, bool at test_branch.py:{line}, follows the data; what runs after it is not "
            "gated",
            "test_branch.py::test_guarded[[]2]: *",
        ]
    )
    assert "test_plain:" not in result.stdout.str()


def test_a_compute_hash_stop_is_where_the_rootdir_is_not_the_working_directory(
    pytester, monkeypatch
):
    pytester.makeini(SUITE_INI)
    (pytester.path / "sub").mkdir()
    (pytester.path / "sub" / "test_branch.py").write_text(BRANCH)
    line = BRANCH.splitlines().index("        if y.abs().mean() > 10:") + 1
    monkeypatch.chdir(pytester.path / "sub")
    result = pytester.runpytest("-p", "no:xdist", "test_branch.py", "--workload-json=r.json")
    result.assert_outcomes(passed=3)
    stop = f"bool at sub/test_branch.py:{line}, follows the data"
    result.stdout.fnmatch_lines(
        [f"sub/test_branch.py::test_guarded[[]1]: Guarded's compute hash covers * op 5, {stop};*"]
    )
    (test, *_) = json.loads((pytester.path / "sub" / "r.json").read_text())["tests"]
    assert test["workloads"][0]["compute_partial"].endswith(stop)


@pytest.mark.parametrize("mode", [("-p", "no:xdist"), ("-n", "2")], ids=["serial", "n2"])
def test_the_summary_line_counts_the_workloads_no_replay_timed(pytester, mode):
    pytester.makeini(SUITE_INI)
    pytester.makepyfile(test_branch=BRANCH.replace("@pytest.mark.workloads\n", ""))
    result = pytester.runpytest(*mode, "--workload-record=all", "--workload-report=summary")
    result.assert_outcomes(passed=3)
    # (unmarked tests recorded by --workload-record=all are not replayed)
    result.stdout.fnmatch_lines(
        [
            "3 tests recorded 3 workloads (3 top-level, 3 distinct hashes, 3 top-level not "
            "timed by a replay); no collapse; 2 tests with a compute hash that stops early "
            "(below) across the session"
        ]
    )


COMPILED_IN_A_FIXTURE = """
import pytest
import torch


@pytest.fixture(scope="module")
def output():
    model = torch.compile(torch.nn.Linear(4, 2), backend="eager", fullgraph=True)
    exported = torch.export.export(torch.nn.Linear(4, 2), (torch.rand(3, 4),), strict=True)
    return model(torch.rand(3, 4)), exported


@pytest.mark.workloads
def test_shape(output):
    assert output[0].shape == (3, 2)
"""


def test_a_fixture_that_compiles_and_exports_its_model_runs_as_without_the_watch(pytester):
    pytester.makeini(SUITE_INI)
    pytester.makepyfile(test_compiled=COMPILED_IN_A_FIXTURE)
    # (-W error: no warning of the watch's making, such as torch.compile's about global hooks)
    result = pytester.runpytest_subprocess("-p", "no:xdist", "-W", "error")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["pytest-workload: 1 recorded test uses a fixture *(output)*"])
