"""The line a run prints while it times a test's workloads, with an injected clock."""

from __future__ import annotations

from pytest_workload._perf.orchestrate import TimingProgress


def _run(live, times):
    """Progress over ``len(times) - 1`` workloads, the clock reading ``times`` in turn."""
    shown = []
    clock = iter(times)
    progress = TimingProgress(
        lambda line, done: shown.append((line, done)), live=live, clock=lambda: next(clock)
    )
    total = len(times) - 1
    for done in range(total + 1):
        progress("t.py::test_big", done, total)
    return shown


def test_quick_timing_says_nothing():
    assert _run(live=True, times=[0.0, 0.5, 1.0, 1.9]) == []
    assert _run(live=False, times=[0.0, 0.5, 1.0, 1.9]) == []


def test_plain_output_gets_one_line_per_long_test():
    shown = _run(live=False, times=[0.0, 1.0, 2.5, 60.0, 61.0])
    assert shown == [
        (
            "pytest-workload: timing the workloads of t.py::test_big after its body: 2 of 4 "
            "done, 2 s so far",
            False,
        )
    ]


def test_a_terminal_line_is_rewritten_then_erased():
    shown = _run(live=True, times=[0.0, 1.0, 2.5, 60.0, 61.0])
    assert [line.split(": ", 2)[-1] for line, _ in shown[:-1]] == [
        "2 of 4 done, 2 s so far",
        "3 of 4 done, 60 s so far",
    ]
    assert shown[-1] == ("", True)


SLOW = """
import random
import time

import pytest
import torch
from torch import nn


class Jittery(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.lin = nn.Linear(4, width)

    def forward(self, x):
        time.sleep(random.uniform(0, 0.01))  # never precise: timed for the whole budget
        return self.lin(x)


@pytest.mark.workloads
def test_slow():
    Jittery(4)(torch.rand(1, 4))
    Jittery(2)(torch.rand(1, 4))
"""


def test_a_long_timing_prints_one_plain_line_and_nothing_under_q(pytester, monkeypatch):
    """Each workload is timed for 2.5 s: after the first, its test has taken long enough."""
    monkeypatch.setenv("CI", "1")
    pytester.makeini("[pytest]\nworkload_time_budget = 2.5\n")
    pytester.makepyfile(test_slow=SLOW)
    result = pytester.runpytest("-p", "no:xdist")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "pytest-workload: timing the workloads of test_slow.py::test_slow after its body: "
            "1 of 2 done, * s so far"
        ]
    )
    assert result.stdout.str().count("pytest-workload: timing") == 1
    quiet = pytester.runpytest("-p", "no:xdist", "-q")
    quiet.assert_outcomes(passed=1)
    quiet.stdout.no_fnmatch_line("*pytest-workload: timing*")
