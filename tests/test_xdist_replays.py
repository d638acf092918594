"""Where xdist relaxes the drift gate (more than one worker, ``--workload-perf`` not strict),
top-level workloads are not replayed for timing: a timing taken beside other workers is biased
and could gate nothing. They are timed from the calls the test made, judged against no
baseline, and counted in one line; ``strict`` and a run in one process replay them as before.

Every forward of the inner suite's model appends to a file, so a test counts the calls made,
replays included, without timing anything.
"""

from __future__ import annotations

import json

import pytest

from pytest_workload._workload.timing import (
    FIRST_CALL,
    REPLAYED,
    XDIST_NOT_MEASURED,
    XDIST_OBSERVED,
    Measured,
)
from tests.pytester_suite import SUITE_INI, XDIST_MODES

COUNTED = """
import pytest
import torch
from torch import nn


class Counted(nn.Module):
    def __init__(self, name):
        super().__init__()
        self.name = name
        self.lin = nn.Linear(4, 2)

    def forward(self, x):
        with open(f"calls-{self.name}", "a") as calls:
            calls.write("x")
        return self.lin(x)


@pytest.mark.parametrize("calls", [1, 3])
@pytest.mark.workloads
def test_calls(calls):
    model = Counted(f"c{calls}").eval()
    for _ in range(calls):
        model(torch.rand(1, 4))
"""

#: Linear(4, 2) on one row: 2 * 4 * 2.
FLOPS = 16

LINE = (
    "pytest-workload: 2 top-level workloads were not replayed for timing: xdist workers share "
    "the cores, which biases timings, so each is timed from its test's own calls where any "
    "were observed, neither judged against a baseline nor written as one, and says so in the "
    "JSON report *; for replayed timings run in one process "
    "(`pytest --workload-snapshot -p no:xdist`) or pass "
    "--workload-perf=strict"
)

N2 = XDIST_MODES["n2"]


@pytest.fixture
def counted(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini(SUITE_INI)
    pytester.makepyfile(test_counted=COUNTED)
    return pytester


def _run(
    pytester: pytest.Pytester, *args: str
) -> tuple[pytest.RunResult, dict, dict[str, dict], dict[str, int]]:
    """The run, its JSON report, each test's workload by its parameter (``c1``, ``c3``) and
    how often each model's forward ran, replays included."""
    for old in pytester.path.glob("calls-*"):
        old.unlink()
    result = pytester.runpytest(*args, "--workload-json=r.json")
    result.assert_outcomes(passed=2)
    report = json.loads((pytester.path / "r.json").read_text())
    workloads = {
        "c" + t["nodeid"].split("[")[1].rstrip("]"): t["workloads"][0] for t in report["tests"]
    }
    calls = {p.name[len("calls-") :]: len(p.read_text()) for p in pytester.path.glob("calls-*")}
    return result, report, workloads, calls


@pytest.mark.parametrize("perf", ["on", "off"])
def test_xdist_workers_replay_nothing_and_say_why(counted, perf):
    result, report, workloads, calls = _run(counted, *N2, f"--workload-perf={perf}")
    assert calls == {"c1": 1, "c3": 3}  # the test's own calls, nothing more
    once, thrice = workloads["c1"], workloads["c3"]
    # the first call ran under the tracer: a model called once has no observed call to time
    assert once["measured"] == Measured(XDIST_NOT_MEASURED, FIRST_CALL).to_dict()
    assert once["timing"] is None
    assert thrice["measured"] == Measured(XDIST_OBSERVED, FIRST_CALL).to_dict()
    assert thrice["timing"]["source"] == "recorded calls"
    assert once["flops"] == thrice["flops"] == FLOPS
    assert report["not_replayed"] == 2  # counted over both workers' tests
    assert "not_timed" not in report
    result.stdout.fnmatch_lines([LINE])


def test_the_relaxed_gate_judges_no_timing_it_did_not_replay(counted):
    gate = ("--workload-snapshot", "--workload-perf=on")
    # a baseline for c3 only, written in one process (strict: whatever this machine's load)
    serial = ("--workload-snapshot", "--workload-perf=strict", "--snapshot-update")
    counted.runpytest(*XDIST_MODES["no-xdist"], *serial, "-k", "3").assert_outcomes(passed=1)
    baselines = sorted((counted.path / "__workload_baselines__").rglob("*.json"))
    assert len(baselines) == 1
    counted.runpytest(*N2, *gate, "--snapshot-update").assert_outcomes(passed=2)
    assert sorted((counted.path / "__workload_baselines__").rglob("*.json")) == baselines
    result, _, _, calls = _run(counted, *N2, *gate)
    assert calls == {"c1": 1, "c3": 3}
    # neither a missing baseline (c1) nor a drift from the stored one (c3) is claimed
    result.stdout.no_fnmatch_line("*workload performance*")
    result.stdout.no_fnmatch_line("*timing baseline*")
    result.stdout.fnmatch_lines([LINE])
    # in one process the gate judges again: c1 has no baseline (c3's verdict would depend on
    # this machine's load)
    alone = counted.runpytest(*XDIST_MODES["no-xdist"], *gate, "-k", "1")
    alone.assert_outcomes(passed=1)
    alone.stdout.fnmatch_lines(["1 workload without a timing baseline: *"])


@pytest.mark.parametrize(
    "args",
    [
        (*XDIST_MODES["no-xdist"], "--workload-perf=on"),
        (*XDIST_MODES["n0"], "--workload-perf=on"),
        (*N2, "--workload-perf=strict"),
    ],
    ids=["no-xdist", "n0", "n2-strict"],
)
def test_one_process_and_strict_replay_as_before(counted, args):
    result, report, workloads, calls = _run(counted, *args)
    for w in workloads.values():
        assert w["measured"] == Measured(REPLAYED, FIRST_CALL).to_dict()
        assert w["timing"]["source"] == "replay"
    # a replay makes 2 warm-up calls and 6 samples at least
    assert calls["c1"] >= 1 + 8 and calls["c3"] >= 3 + 8
    assert "not_replayed" not in report
    result.stdout.no_fnmatch_line("*not replayed*")


def test_strict_xdist_workers_still_write_baselines(counted):
    update = (*N2, "--workload-snapshot", "--workload-perf=strict", "--snapshot-update")
    counted.runpytest(*update).assert_outcomes(passed=2)
    assert len(list((counted.path / "__workload_baselines__").rglob("*.json"))) == 2
