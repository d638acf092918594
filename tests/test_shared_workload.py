"""Two tests that call one CNN with one input signature, one input taking an extra branch: one
workload hash, two computations, each with its own timing baseline (end-to-end runs, timed by
the injected stopwatch, so no outcome depends on this machine)."""

from __future__ import annotations

import pytest

BRANCHY = """
import pytest
import torch
from torch import nn

from tests.conftest import charge

SLOWER_PLAIN = {plain}
SLOWER_BRANCH = {branch}


class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.extra = nn.Conv2d(8, 8, 3, padding=1)
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        y = self.stem(x)
        if x.mean() > 0:  # the data decides: same signature, more compute
            y = self.extra(y)
            charge(0.018 * SLOWER_BRANCH)
        else:
            charge(0.010 * SLOWER_PLAIN)
        return self.head(y.mean(dim=(2, 3)))


@pytest.mark.workloads
def test_plain():
    torch.manual_seed(0)
    Branchy().eval()(-torch.ones(1, 3, 16, 16))


@pytest.mark.workloads
def test_branch():
    torch.manual_seed(0)
    Branchy().eval()(torch.ones(1, 3, 16, 16))
"""

ACCEPT = ("--workload-snapshot", "--snapshot-update", "-p", "no:xdist")


@pytest.fixture
def branchy(pytester, injected):
    """The project, its gate on in addopts; each call of ``write`` sets how much slower each
    test's computation runs."""
    pytester.makeini(
        "[pytest]\naddopts = --workload-snapshot -p no:xdist\nworkload_time_budget = 0.01\n"
    )
    injected(0.0)  # each call's time is what the model charges

    def write(plain=1.0, branch=1.0):
        pytester.makepyfile(test_branchy=BRANCHY.format(plain=plain, branch=branch))

    return write


def test_unchanged_code_passes_after_an_update(pytester, branchy):
    """The issue: both tests shared one baseline, and the next plain run failed on FLOPs 1.83x
    the other test's."""
    branchy()
    pytester.runpytest().assert_outcomes(failed=2)  # no snapshots yet
    pytester.runpytest(*ACCEPT).assert_outcomes(passed=2)
    assert len(list((pytester.path / "__workload_baselines__").rglob("*.json"))) == 2
    pytester.runpytest().assert_outcomes(passed=2)


@pytest.mark.parametrize("slowed", ["plain", "branch"])
def test_a_slowdown_of_either_test_fails_it_alone(pytester, branchy, slowed):
    """The issue: against the other test's baseline, the plain test's 40% slowdown passed."""
    branchy()
    pytester.runpytest(*ACCEPT).assert_outcomes(passed=2)
    branchy(**{slowed: 1.4})
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [f"FAILED test_branchy.py::test_{slowed} - Failed: performance regression: *"]
    )
