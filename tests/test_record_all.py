"""--workload-record=all: an existing suite records without being edited."""

from __future__ import annotations

import json

import pytest

from pytest_workload._workload.timing import FIRST_CALL, REPLAYED, UNMARKED_OBSERVED, Measured
from tests.pytester_suite import MODELS, SUITE_INI, XDIST_MODES, lit

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
        "test_unmarked": Measured(UNMARKED_OBSERVED, FIRST_CALL).to_dict(),
        "test_marked": Measured(REPLAYED, FIRST_CALL).to_dict(),
        "test_fixture": Measured(REPLAYED, FIRST_CALL).to_dict(),
    }


def test_unmarked_timings_are_neither_judged_nor_written_as_baselines(pytester, injected):
    # (the marked tests' replays are judged against their baselines: timed by the injected
    # stopwatch, so no load on this machine can make them fail the rerun)
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
    written = {p.parent.name for p in (pytester.path / "__workload_baselines__").rglob("*.json")}
    assert written == {hashes["test_marked"], hashes["test_fixture"]}
    pytester.runpytest(*gate).assert_outcomes(passed=4)


FOLLOWS_DATA = """
import pathlib

HERE = pathlib.Path(__file__).parent


def run(kernel=3):
    # the call signature follows the test's data: an optional argument, drawn or not
    drawn = {"scale": 2.0} if (HERE / "draw").read_text() == "pad" else {}
    Net(kernel).eval()(torch.rand(1, 3, 8, 8), **drawn)


def test_unmarked():
    run()


@pytest.mark.workloads
def test_marked():
    run()


def test_edited():
    run(int((HERE / "kernel").read_text()))
"""

NOTE = (
    "call signature differs from the snapshot's: Net (test_data.Net): input kwargs['scale'] "
    "added: 2.0; not judged for a test recorded by --workload-record=all: its inputs may follow "
    "the test's data; mark the test to gate it"
)


@pytest.mark.parametrize("mode", ["no-xdist", "n2"])
def test_a_call_signature_that_follows_the_data_is_judged_only_in_a_marked_test(pytester, mode):
    pytester.makeini(SUITE_INI)
    pytester.makepyfile(test_data=MODELS + FOLLOWS_DATA)
    (pytester.path / "draw").write_text("none")
    (pytester.path / "kernel").write_text("3")
    gate = (*XDIST_MODES[mode], "--workload-record=all", "--workload-snapshot")
    pytester.runpytest(*gate, "--snapshot-update").assert_outcomes(passed=3)
    stored = {p: p.read_bytes() for p in pytester.path.rglob("*.workloads")}
    assert len(stored) == 3

    (pytester.path / "draw").write_text("pad")
    (pytester.path / "kernel").write_text("5")
    result = pytester.runpytest(*gate, "--workload-json=r.json")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        lit("*test_marked*", "*changed:  Net (test_data.Net)*", "*kwargs['scale'] added: 2.0")
    )
    result.stdout.fnmatch_lines(["*test_edited*", "*structure changed*"])
    notes = json.loads((pytester.path / "r.json").read_text())["notes"]
    assert [(n["nodeid"], n["text"]) for n in notes] == [("test_data.py::test_unmarked", NOTE)]
    assert {p: p.read_bytes() for p in stored} == stored

    pytester.runpytest(*gate, "--snapshot-update").assert_outcomes(passed=3)
    assert all(b"scale" in p.read_bytes() for p in stored)
    result = pytester.runpytest(*gate, "--workload-json=r.json")
    result.assert_outcomes(passed=3)
    assert json.loads((pytester.path / "r.json").read_text())["notes"] == []
