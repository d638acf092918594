"""Measuring changes nothing a test can see: what a later test reads is the same with the plugin
on as off, and a workload's numbers are those of the call the test made."""

from __future__ import annotations

import json

import pytest

from tests.pytester_suite import SUITE_INI

STATEFUL = """
import json
import random

import numpy as np
import pytest
import torch
from torch import nn
from torch.nn.modules.module import register_module_forward_hook


class Counting(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.calls = 0
        self.seen = []
        self.register_buffer("count", torch.zeros(()))

    def forward(self, x):
        self.calls += 1
        self.seen.append(x.shape[0])
        self.count = self.count + 1
        return self.lin(x)


class Mutating(nn.Module):
    def forward(self, x):
        return x.mul_(2)


class Momentum(nn.Module):
    def __init__(self):
        super().__init__()
        self.query, self.key = nn.Linear(3, 3), nn.Linear(3, 3)

    def forward(self, x):
        with torch.no_grad():
            for pq, pk in zip(self.query.parameters(), self.key.parameters()):
                pk.mul_(0.9).add_(pq, alpha=0.1)
        return self.key(self.query(x))


class Dice(nn.Module):
    def forward(self, x):
        return x + torch.rand(1) + random.random() + float(np.random.rand())


HOOK_CALLS = {"module": 0, "global": 0}
INPUT = {}


@pytest.fixture(scope="module")
def models():
    torch.manual_seed(0)
    models = {"counting": Counting(), "mutating": Mutating(), "momentum": Momentum()}
    models["dice"] = Dice()
    models["counting"].register_forward_hook(lambda *_: count_hook("module"))
    return models


def count_hook(kind):
    HOOK_CALLS[kind] += 1


@pytest.mark.workloads
def test_calls(models):
    handle = register_module_forward_hook(
        lambda m, *_: count_hook("global") if m is models["dice"] else None
    )
    models["counting"](torch.ones(2, 3))
    INPUT["x"] = torch.ones(3)
    models["mutating"](INPUT["x"])
    models["momentum"](torch.ones(1, 3))
    random.seed(0)
    np.random.seed(0)
    models["dice"](torch.zeros(1))
    INPUT["handle"] = handle


def test_reads(models):
    INPUT["handle"].remove()
    counting, momentum = models["counting"], models["momentum"]
    state = {
        "module hook": HOOK_CALLS["module"],
        "global hook": HOOK_CALLS["global"],
        "calls": counting.calls,
        "seen": counting.seen,
        "count": counting.count.item(),
        "input": INPUT["x"].tolist(),
        "random": random.random(),
        "numpy": float(np.random.rand()),
        "torch": torch.rand(1).item(),
        "momentum": [p.sum().item() for p in momentum.key.parameters()],
    }
    print("STATE " + json.dumps(state))
"""


def _state(pytester: pytest.Pytester, *args: str) -> dict[str, object]:
    result = pytester.runpytest_subprocess("-s", "-p", "no:randomly", *args)
    result.assert_outcomes(passed=2)
    (line,) = [line for line in result.outlines if "STATE " in line]
    return json.loads(line.split("STATE ", 1)[1])


def test_a_later_test_reads_the_state_it_reads_without_the_plugin(pytester):
    pytester.makeini(SUITE_INI)
    pytester.makepyfile(test_stateful=STATEFUL)
    off = _state(pytester, "-p", "no:workload")
    on = _state(pytester, "-p", "no:xdist")
    assert off["module hook"] == 1 and off["calls"] == 1 and off["input"] == [2, 2, 2]
    assert on == off
