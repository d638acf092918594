"""--workload-record=all: an existing suite records without being edited."""

from __future__ import annotations

import json

import pytest

from pytest_workload._model.measured import UNMARKED_OBSERVED
from tests.pytester_suite import MODELS, SUITE_INI, XDIST_MODES

UNEDITED = """
def test_small():
    Net().eval()(torch.rand(1, 3, 8, 8))


def test_large():
    Net().eval()(torch.rand(1, 3, 16, 16))


def test_no_model():
    assert 1 + 1 == 2


@pytest.mark.workloads(record=False)
def test_opted_out():
    Net().eval()(torch.rand(1, 3, 12, 12))


@pytest.mark.workloads(max_depth=1)
def test_deeper():
    Net().eval()(torch.rand(1, 3, 8, 8))
"""


@pytest.fixture
def unedited(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini(SUITE_INI)
    pytester.makepyfile(test_suite=MODELS + UNEDITED)
    return pytester


def _recorded(pytester: pytest.Pytester, *args: str) -> dict[str, list[tuple[str, int]]]:
    result = pytester.runpytest(*args, "--workload-json=r.json")
    result.assert_outcomes(passed=5)
    report = json.loads((pytester.path / "r.json").read_text())
    return {
        t["nodeid"].split("::")[1]: [(w["name"], w["depth"]) for w in t["workloads"]]
        for t in report["tests"]
    }


def test_all_records_every_test_that_calls_a_module(unedited):
    recorded = _recorded(unedited, "--workload-record=all")
    assert recorded == {
        "test_small": [("Net", 0)],
        "test_large": [("Net", 0)],
        "test_no_model": [],
        "test_deeper": [("Net", 0), ("stem", 1), ("blocks", 1), ("head", 1)],
    }


def test_marked_is_the_default_and_records_only_marked_tests(unedited):
    assert _recorded(unedited) == {
        "test_deeper": [("Net", 0), ("stem", 1), ("blocks", 1), ("head", 1)]
    }


def test_the_ini_key_chooses_all(unedited):
    unedited.makeini(SUITE_INI + "workload_record = all\n")
    assert set(_recorded(unedited)) == {"test_small", "test_large", "test_no_model", "test_deeper"}


def test_outcomes_are_those_of_a_run_without_the_plugin(unedited):
    unedited.runpytest("-p", "no:workload").assert_outcomes(passed=5)
    unedited.runpytest("--workload-record=all").assert_outcomes(passed=5)


@pytest.mark.parametrize("mode", list(XDIST_MODES), ids=list(XDIST_MODES))
def test_snapshots_of_an_unedited_suite_are_stable(unedited, mode):
    args = (*XDIST_MODES[mode], "--workload-record=all", "--workload-snapshot")
    unedited.runpytest(*args, "--snapshot-update").assert_outcomes(passed=5)
    stored = sorted(p.name for p in unedited.path.rglob("*.workloads"))
    assert stored == ["test_deeper.workloads", "test_large.workloads", "test_small.workloads"]
    unedited.runpytest(*args).assert_outcomes(passed=5)


def test_a_bad_record_mode_is_a_usage_error(unedited):
    result = unedited.runpytest("--workload-record=some")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--workload-record: expected 'marked' or 'all', got 'some'*"])


def test_a_bad_record_argument_is_a_usage_error(pytester):
    pytester.makepyfile(
        "import pytest\n\n@pytest.mark.workloads(record='no')\ndef test_x():\n    pass\n"
    )
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*test_x: @pytest.mark.workloads(record=...) must be True or*"])


SIDE_EFFECTS = """
import random

CALLS = []


class Logs(nn.Module):
    def __init__(self, log=True):
        super().__init__()
        self.rng = random.Random(0) if log else None
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        if self.rng is not None:
            CALLS.append(self.rng.random())
        return self.lin(x)


SHARED = Logs()


def test_unmarked():
    for _ in range(5):
        SHARED(torch.rand(2, 4))


@pytest.mark.workloads
def test_later_tests_see_the_calls_the_tests_made():
    expected = random.Random(0)
    assert CALLS == [expected.random() for _ in range(5)]


@pytest.mark.workloads
def test_marked():
    Logs(log=False)(torch.rand(2, 4))


def test_fixture(workloads):
    Logs(log=False)(torch.rand(2, 4))
"""


def test_unmarked_tests_are_never_replayed_and_say_how_they_were_timed(pytester):
    pytester.makeini(SUITE_INI)
    pytester.makepyfile(test_side=MODELS + SIDE_EFFECTS)
    pytester.runpytest("-p", "no:workload", "-k", "not fixture").assert_outcomes(passed=3)
    result = pytester.runpytest("--workload-record=all", "--workload-json=r.json")
    result.assert_outcomes(passed=4)
    report = json.loads((pytester.path / "r.json").read_text())
    timing = {
        t["nodeid"].split("::")[1]: t["workloads"][0]["measured"]
        for t in report["tests"]
        if t["workloads"]
    }
    assert timing == {
        "test_unmarked": {"timing": UNMARKED_OBSERVED, "flops": "first call"},
        "test_marked": {"timing": "replayed", "flops": "first call"},
        "test_fixture": {"timing": "replayed", "flops": "first call"},
    }


def test_unmarked_timings_are_neither_judged_nor_written_as_baselines(pytester):
    pytester.makeini(SUITE_INI)
    pytester.makepyfile(test_side=MODELS + SIDE_EFFECTS)
    gate = ("--workload-record=all", "--workload-snapshot", "--workload-perf=strict")
    result = pytester.runpytest(*gate, "--snapshot-update", "--workload-json=r.json")
    result.assert_outcomes(passed=4)
    report = json.loads((pytester.path / "r.json").read_text())
    hashes = {
        t["nodeid"].split("::")[1]: t["workloads"][0]["hash"]
        for t in report["tests"]
        if t["workloads"]
    }
    written = {p.stem for p in (pytester.path / "__workload_baselines__").rglob("*.json")}
    assert written == {hashes["test_marked"], hashes["test_fixture"]}
    pytester.runpytest(*gate).assert_outcomes(passed=4)
