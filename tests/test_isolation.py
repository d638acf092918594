"""Measuring changes nothing a test can see: what a later test reads is the same with the plugin
on as off, and a workload's numbers are those of the call the test made."""

from __future__ import annotations

import json

import pytest

from tests.pytester_suite import SUITE_INI

STATEFUL = """
import itertools
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


class Drawing(nn.Module):
    def __init__(self):
        super().__init__()
        self.rng = random.Random(0)
        self.np_rng = np.random.default_rng(0)
        self.legacy_rng = np.random.RandomState(0)
        self.generator = torch.Generator().manual_seed(0)
        self.counter = itertools.count(1)
        self.step = itertools.count(0.5, 0.25)

    def forward(self, x):
        noise = torch.rand(x.shape, generator=self.generator)
        drawn = self.rng.random() + self.np_rng.random() + self.legacy_rng.rand()
        return x + noise + drawn + next(self.counter) + next(self.step)


HOOK_CALLS = {"module": 0, "global": 0}
INPUT = {}


@pytest.fixture(scope="module")
def models():
    torch.manual_seed(0)
    models = {"counting": Counting(), "mutating": Mutating(), "momentum": Momentum()}
    models["dice"] = Dice()
    models["drawing"] = Drawing()
    models["drawing"].again = models["drawing"].counter  # one count under two names
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
    models["drawing"](torch.zeros(2))
    INPUT["handle"] = handle


def test_reads(models):
    INPUT["handle"].remove()
    counting, momentum, drawing = models["counting"], models["momentum"], models["drawing"]
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
        "module generators": [
            drawing.rng.random(),
            drawing.np_rng.random(),
            drawing.legacy_rng.rand(),
            torch.rand(1, generator=drawing.generator).item(),
            next(drawing.counter),
            next(drawing.again),
            next(drawing.step),
        ],
    }
    with open("state.json", "w") as out:
        json.dump(state, out)
"""


def _state(pytester: pytest.Pytester, *args: str) -> dict[str, object]:
    result = pytester.runpytest_subprocess("-p", "no:randomly", *args)
    result.assert_outcomes(passed=2)
    return json.loads((pytester.path / "state.json").read_text())


@pytest.mark.parametrize(
    "distribution",
    [("-p", "no:xdist"), ("-n", "2", "--dist", "loadfile")],
    ids=["no-xdist", "n2"],
)
def test_a_later_test_reads_the_state_it_reads_without_the_plugin(pytester, distribution):
    pytester.makeini(SUITE_INI)
    pytester.makepyfile(test_stateful=STATEFUL)
    off = _state(pytester, "-p", "no:workload", "-p", "no:xdist")
    on = _state(pytester, *distribution)
    assert off["module hook"] == 1 and off["calls"] == 1 and off["input"] == [2, 2, 2]
    assert off["module generators"][4:] == [2, 3, 0.75]
    assert on == off


SECOND_CALL = """
import sys

import pytest
import torch
from torch import nn


class Once(nn.Module):
    def __init__(self, error):
        super().__init__()
        self.error = error
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls > 1:
            self.error()
        return x * 2


@pytest.mark.workloads
def test_fails_when_called_twice():
    Once(lambda: pytest.fail("called twice"))(torch.rand(3))


@pytest.mark.workloads
def test_exits_when_called_twice():
    Once(lambda: sys.exit(3))(torch.rand(4))


@pytest.mark.workloads
def test_plain():
    nn.Linear(2, 2)(torch.rand(1, 2))
"""


def test_a_replay_that_raises_leaves_outcomes_and_snapshots_alone(pytester, mode):
    pytester.makeini(SUITE_INI)
    pytester.makepyfile(test_second=SECOND_CALL)
    # strict: xdist workers replay only then (an update fails no timing, it writes baselines)
    update = (
        "--workload-snapshot",
        "--snapshot-update",
        "--workload-perf=strict",
        "--workload-json=r.json",
    )
    first = pytester.runpytest(*mode, *update)
    first.assert_outcomes(passed=3)
    snapshots = sorted((pytester.path / "__workload_snapshots__").rglob("*.workloads"))
    assert [p.name.split(".")[0] for p in snapshots] == [
        "test_exits_when_called_twice",
        "test_fails_when_called_twice",
        "test_plain",
    ]
    texts = [p.read_text() for p in snapshots]
    again = pytester.runpytest(*mode, *update)
    again.assert_outcomes(passed=3)
    assert [p.read_text() for p in snapshots if p.exists()] == texts
    report = json.loads((pytester.path / "r.json").read_text())
    measured = {t["nodeid"].split("::")[1]: t["workloads"][0]["measured"] for t in report["tests"]}
    first_call = {
        "flops": "first call",
        "flops_reason": None,
        "timing_reason": None,
        "timing_left_out": None,
    }
    assert measured == {
        "test_fails_when_called_twice": {
            **first_call,
            "timing": "not measured",
            "timing_reason": "the replay raised Failed: called twice",
        },
        "test_exits_when_called_twice": {
            **first_call,
            "timing": "not measured",
            "timing_reason": "the replay raised SystemExit: 3",
        },
        "test_plain": {**first_call, "timing": "replayed"},
    }


RELEASE = """
import gc
import weakref

import pytest
import torch
from torch import nn

REFS = []


@pytest.mark.workloads(max_depth=1)
def test_makes_a_model():
    model = nn.Sequential(nn.Linear(256, 256), nn.ReLU())
    x = torch.rand(8, 256)
    out = model(x)
    REFS.extend(weakref.ref(o) for o in (model, x, out))


@pytest.mark.workloads
def test_fails_with_a_model():
    model = nn.Linear(256, 256)
    REFS.append(weakref.ref(model))
    model(torch.rand(8, 256))
    del model  # pytest keeps a failed test's frame: only the recorder could keep the model now
    assert False, "fails on purpose"


def test_nothing_is_kept():
    gc.collect()
    assert len(REFS) == 4
    assert [r() for r in REFS] == [None] * 4
"""


def test_no_model_input_or_output_outlives_its_test(pytester, mode):
    pytester.makeini(SUITE_INI)
    pytester.makepyfile(test_release=RELEASE)
    same_worker = ("--dist", "loadfile") if "-n" in mode else ()
    result = pytester.runpytest(*mode, *same_worker, "--tb=no", "-p", "no:randomly")
    result.assert_outcomes(passed=2, failed=1)


INTERRUPTED = """
import os

import pytest
import torch
from torch import nn


class Interrupts(nn.Module):
    calls = 0

    def forward(self, x):
        Interrupts.calls += 1
        if Interrupts.calls > 1 and os.path.exists("interrupt"):
            raise KeyboardInterrupt
        return x * 2


@pytest.mark.workloads
def test_a():
    nn.Linear(2, 2)(torch.rand(1, 2))


@pytest.mark.workloads
def test_b():
    Interrupts()(torch.rand(3))


@pytest.mark.workloads
def test_c():
    nn.Linear(3, 3)(torch.rand(1, 3))
"""


def test_a_keyboard_interrupt_in_a_replay_stops_the_run_and_deletes_no_snapshot(pytester):
    pytester.makeini(SUITE_INI)
    pytester.makepyfile(test_interrupted=INTERRUPTED)
    update = ("-p", "no:xdist", "--workload-snapshot", "--snapshot-update")
    pytester.runpytest_subprocess(*update).assert_outcomes(passed=3)
    snapshots = sorted((pytester.path / "__workload_snapshots__").rglob("*.workloads"))
    texts = [p.read_text() for p in snapshots]
    assert len(texts) == 3
    (pytester.path / "interrupt").touch()
    interrupted = pytester.runpytest_subprocess(*update)
    assert interrupted.ret == pytest.ExitCode.INTERRUPTED
    interrupted.stdout.fnmatch_lines(["*KeyboardInterrupt*"])
    assert [p.read_text() for p in snapshots if p.exists()] == texts


def test_a_count_that_cannot_be_copied_refuses_the_replay_and_is_left_as_it_was():
    import itertools
    from fractions import Fraction

    from torch import nn

    from pytest_workload._perf.replay import NotIsolableError, isolated

    module = nn.Module()
    module.counter = counter = itertools.count(Fraction(1, 2))
    refused = pytest.raises(NotIsolableError, match=r"attribute counter is count\(Fraction")
    with refused, isolated([module]):
        next(module.counter)
    assert module.counter is counter
    assert next(counter) == Fraction(1, 2)
