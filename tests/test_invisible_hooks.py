"""After a recorded call the model is the one the test built: each of torch's ways to look at a
module sees the same with the plugin off and with ``--workload-record=all``, after the first
(traced), third (observed) and sixth (settled) call, at depth 0 and 1. The same test body runs
in both; each writes what it observes to a file, and the two runs must agree."""

from __future__ import annotations

import json

import pytest
import torch

from tests.pytester_suite import SUITE_INI

SUITE = """
import copy
import io
import json
import pickle
import warnings

import pytest
import torch
from torch import nn
from torch.nn.modules import module as torch_module

TABLES = (
    "_forward_pre_hooks",
    "_forward_pre_hooks_with_kwargs",
    "_forward_hooks",
    "_forward_hooks_with_kwargs",
    "_forward_hooks_always_called",
)
X = torch.rand(1, 3, 8, 8, generator=torch.Generator().manual_seed(0))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 4, 3, padding=1)
        self.blocks = nn.Sequential(nn.Conv2d(4, 4, 3, padding=1), nn.ReLU())
        self.head = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(self.stem(x)).mean(dim=(2, 3)))


@pytest.fixture(
    params=[
        pytest.param((calls, depth), marks=pytest.mark.workloads(max_depth=depth))
        for calls, depth in ((1, 0), (3, 1), (6, 0), (6, 1))
    ],
    ids=lambda p: f"calls{p[0]}-depth{p[1]}",
)
def made(request):
    # (built and called in the test itself: the recorder records the test's calls)

    def make():
        torch.manual_seed(0)
        net = Net().eval()
        for _ in range(request.param[0]):
            net(X)
        return net

    return make


@pytest.fixture
def seen(request):
    observed = []
    yield observed
    with open("seen.jsonl", "a") as out:
        out.write(json.dumps([request.node.name, observed]) + "\\n")


def tables(module):
    return [[path, [len(getattr(m, t)) for t in TABLES]] for path, m in module.named_modules()]


def values(tensor):
    return [round(v, 6) for v in tensor.flatten().tolist()]


def test_jit_script(made, seen):
    model = made()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scripted = torch.jit.script(model)
    seen += [scripted.code, values(scripted(X))]


def test_jit_trace(made, seen):
    model = made()
    traced = torch.jit.trace(model, (X,))
    seen += [traced.code, values(traced(X))]


def test_export(made, seen):
    model = made()
    program = torch.export.export(model, (X,), strict=False)
    seen += [str(program.graph), values(program.module()(X))]


def test_export_strict(made, seen):
    model = made()
    program = torch.export.export(model, (X,), strict=True)
    seen += [str(program.graph), values(program.module()(X))]


def test_fx_symbolic_trace(made, seen):
    model = made()
    traced = torch.fx.symbolic_trace(model)
    seen += [traced.code, values(traced(X))]


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_compile(made, seen, backend):
    model = made()
    torch._dynamo.reset()
    compiled = torch.compile(model, backend=backend, fullgraph=True)
    twice = torch.compile(lambda x: model(x) * 2, backend=backend, fullgraph=True)
    seen += [values(compiled(X)), values(compiled(X)), values(twice(X))]


def test_deepcopy(made, seen):
    model = made()
    copied = copy.deepcopy(model)
    seen += [tables(copied), values(copied(X))]


def test_pickle(made, seen):
    model = made()
    loaded = pickle.loads(pickle.dumps(model))
    seen += [tables(loaded), values(loaded(X))]


def test_torch_save(made, seen):
    model = made()
    whole, weights = io.BytesIO(), io.BytesIO()
    torch.save(model, whole)
    torch.save(model.state_dict(), weights)
    whole.seek(0)
    weights.seek(0)
    loaded = torch.load(whole, weights_only=False)
    seen += [tables(loaded), values(loaded(X)), sorted(torch.load(weights, weights_only=True))]


def test_state_dict_round_trip(made, seen):
    model = made()
    state = model.state_dict()
    fresh = Net().eval()
    seen += [str(fresh.load_state_dict(state)), str(model.load_state_dict(state))]
    seen += [sorted(state), values(fresh(X))]


def test_hook_tables(made, seen):
    model = made()
    # (the global pre-hook table holds the recorder's watch while it records)
    seen += [tables(model), len(torch_module._global_forward_hooks)]
"""

#: the tests of SUITE: one per way to look at a module
ITEMS = (
    "jit_script",
    "jit_trace",
    "export",
    "export_strict",
    "fx_symbolic_trace",
    "compile",
    "deepcopy",
    "pickle",
    "torch_save",
    "state_dict_round_trip",
    "hook_tables",
)


@pytest.fixture(scope="module", autouse=True)
def _tracers_imported() -> None:
    """Import what export and compile import, here, once: pytester's in-process runs drop the
    modules an inner run imported, and torch refuses to register their operators twice."""
    model = torch.nn.Linear(2, 2)
    torch.export.export(model, (torch.rand(1, 2),))
    torch.compile(model, backend="aot_eager")(torch.rand(1, 2))
    torch._dynamo.reset()


def _observed(pytester: pytest.Pytester, item: str, side: str, *args: str) -> list[list[object]]:
    # (a module of its own per run: TorchScript keeps the classes it compiled by name)
    module = f"test_{item}_{side}"
    pytester.makepyfile(**{module: SUITE})
    result = pytester.runpytest(f"{module}.py::test_{item}", *args)
    lines = (pytester.path / "seen.jsonl").read_text().splitlines()
    (pytester.path / "seen.jsonl").unlink()
    result.assert_outcomes(passed=len(lines))
    assert "could not record" not in result.stdout.str()
    return [json.loads(line) for line in lines]


@pytest.mark.parametrize("item", ITEMS)
def test_the_model_looks_the_same_after_a_recorded_call(pytester, item):
    pytester.makeini(SUITE_INI)
    plain = _observed(pytester, item, "plain", "-p", "no:workload")
    recorded = _observed(
        pytester, item, "recorded", "--workload-record=all", "--workload-json=r.json"
    )
    assert recorded == plain
    assert len(plain) in (4, 8)
    report = json.loads((pytester.path / "r.json").read_text())
    assert all(test["workloads"] for test in report["tests"])


EXPORT_BETWEEN_CALLS = """
import json
import sys

import pytest
import torch
from torch import nn


@pytest.mark.workloads(max_depth=1)
def test_export_between_calls():
    dynamo_loaded = "torch._dynamo" in sys.modules
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU()).eval()
    x = torch.rand(2, 4)
    model(x)
    program = torch.export.export(model, (x,), strict=True)
    model(x)
    with open("seen.json", "w") as out:
        json.dump([dynamo_loaded, str(program.graph), str(program.graph_signature)], out)
"""


def test_strict_export_between_recorded_calls_records_the_calls_only(pytester):
    """In a process of its own, where the export loads ``torch._dynamo`` mid-test: the export
    is the one made without the plugin, and the calls before and after it are recorded, nothing
    of its trace."""
    pytester.makeini(SUITE_INI)
    pytester.makepyfile(test_between=EXPORT_BETWEEN_CALLS)
    seen = []
    for args in (("-p", "no:workload"), ("--workload-record=all", "--workload-json=r.json")):
        pytester.runpytest_subprocess(*args).assert_outcomes(passed=1)
        seen.append(json.loads((pytester.path / "seen.json").read_text()))
    assert seen[1] == seen[0] and seen[0][0] is False
    (test,) = json.loads((pytester.path / "r.json").read_text())["tests"]
    calls = [(w["name"], w["calls"]) for w in test["workloads"]]
    assert calls == [("model", 2), ("0", 2), ("1", 2)]
