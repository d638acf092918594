"""End-to-end: the snapshot gate sees a changed computation, and only a real one."""

from __future__ import annotations

import json
import re

import pytest

from tests.pytester_suite import SUITE_INI, lit

BLOCKS = """
import pytest
import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        BODY


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(Block(), Block())
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        return self.head(self.blocks(x))


@pytest.mark.workloads(max_depth=2)
def test_blocks():
    torch.manual_seed(SEED)
    Net().eval()(torch.rand(1, 8))
"""

RELU = "return F.relu(self.fc(x))"
GELU = "return F.gelu(self.fc(x))"
RESIDUAL = "return F.relu(self.fc(x)) + x"


@pytest.fixture
def blocks(pytester: pytest.Pytester):
    pytester.makeini(SUITE_INI)

    def write(body: str, seed: int = 0) -> None:
        source = BLOCKS.replace("BODY", body).replace("SEED", str(seed))
        pytester.makepyfile(test_blocks=source)

    return write


def _snapshot(pytester: pytest.Pytester) -> dict:
    path = pytester.path / "__workload_snapshots__" / "test_blocks" / "test_blocks.workloads"
    return json.loads(path.read_text())


@pytest.mark.parametrize("mode", [("-p", "no:xdist"), ("-n", "2")], ids=["serial", "n2"])
def test_relu_to_gelu_fails_naming_the_operation(pytester, blocks, mode):
    blocks(RELU)
    update = pytester.runpytest(*mode, "--workload-snapshot", "--snapshot-update")
    update.assert_outcomes(passed=1)
    stored = _snapshot(pytester)
    assert all(len(w["compute_hash"]) == 64 for w in stored["workloads"])
    block_ops = stored["computations"][stored["workloads"][2]["compute_hash"]]
    assert block_ops == [
        "linear(float32[1, 8], float32[8, 8]@fc.weight, float32[8]@fc.bias)",
        "relu(float32[1, 8], inplace=False)",
    ]
    pytester.runpytest(*mode, "--workload-snapshot").assert_outcomes(passed=1)

    blocks(GELU)
    result = pytester.runpytest(*mode, "--workload-snapshot")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        lit(
            "workload snapshot mismatch (*test_blocks.workloads):",
            "  changed:  Net (test_blocks.Net) * -> *",
            "      computation changed (compute hash * -> *)",
            "      blocks.0: relu -> gelu at op 2",
            "      blocks.1: relu -> gelu at op 2",
            "  changed:  blocks (torch.nn.modules.container.Sequential) * -> *",
            "*",
            "  changed:  blocks.[0-1] (test_blocks.Block) * -> *",
            "      computation changed (compute hash * -> *)",
            "      blocks.[0-1]: relu -> gelu at op 2",
        )
    )
    assert _snapshot(pytester) == stored  # a failing gate writes nothing


def test_an_added_residual_fails_naming_the_add(pytester, blocks):
    blocks(RELU)
    pytester.runpytest("--workload-snapshot", "--snapshot-update").assert_outcomes(passed=1)
    blocks(RESIDUAL)
    result = pytester.runpytest("--workload-snapshot")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        lit(
            "  changed:  blocks.[0-1] (test_blocks.Block) * -> *",
            "      computation changed (compute hash * -> *)",
            "      blocks.[0-1]: + add(float32[1, 8], float32[1, 8]) at op 3",
        )
    )


def test_other_weights_and_seeds_pass(pytester, blocks):
    blocks(RELU, seed=0)
    pytester.runpytest("--workload-snapshot", "--snapshot-update").assert_outcomes(passed=1)
    blocks(RELU, seed=1234)
    pytester.runpytest("--workload-snapshot").assert_outcomes(passed=1)


def test_compute_hashes_do_not_depend_on_the_hash_seed(pytester, blocks, monkeypatch):
    blocks(RELU)
    hashes = []
    for seed in ("0", "12345"):
        monkeypatch.setenv("PYTHONHASHSEED", seed)
        out = pytester.path / f"report{seed}.json"
        result = pytester.runpytest_subprocess("-p", "no:xdist", f"--workload-json={out}")
        result.assert_outcomes(passed=1)
        report = json.loads(out.read_text())
        hashes.append([w["compute_hash"] for w in report["tests"][0]["workloads"]])
    assert hashes[0] == hashes[1] and None not in hashes[0]


DATA_DEPENDENT = """
import pytest
import torch
from torch import nn


class Branchy(nn.Module):
    # (it branches on a value the tracer cannot see: no tensor's)

    def forward(self, x):
        return torch.relu(x) if SIGNS.pop(0) > 0 else torch.tanh(x)


SIGNS = [SIGN_A, SIGN_B]


@pytest.mark.workloads
def test_branchy():
    model = Branchy()
    model(torch.ones(1, 4))
    model(torch.ones(1, 4))
"""


@pytest.mark.parametrize("mode", [("-p", "no:xdist"), ("-n", "2")], ids=["serial", "n2"])
def test_a_data_dependent_forward_is_marked_and_does_not_flap(pytester, mode):
    pytester.makeini(SUITE_INI)

    def write(a: int, b: int) -> None:
        source = DATA_DEPENDENT.replace("SIGN_A", str(a)).replace("SIGN_B", str(b))
        pytester.makepyfile(test_branchy=source)

    write(1, -1)
    update = pytester.runpytest(*mode, "--workload-snapshot", "--snapshot-update")
    update.assert_outcomes(passed=1)
    path = pytester.path / "__workload_snapshots__" / "test_branchy" / "test_branchy.workloads"
    (stored,) = json.loads(path.read_text())["workloads"]
    assert stored["data_dependent"] is True
    write(-1, 1)  # the other branch first: another first-call fingerprint, still data-dependent
    pytester.runpytest(*mode, "--workload-snapshot").assert_outcomes(passed=1)
    out = pytester.path / "r.json"
    pytester.runpytest(*mode, f"--workload-json={out}").assert_outcomes(passed=1)
    (row,) = json.loads(out.read_text())["tests"][0]["workloads"]
    assert row["data_dependent"] is True and row["compute_hash"] != stored["compute_hash"]


DETECTOR = """
import pytest
import torch
from torchvision.models.detection import fasterrcnn_mobilenet_v3_large_320_fpn


@pytest.mark.workloads
@pytest.mark.parametrize("seed", range(6))
def test_detector(seed):
    torch.manual_seed(BASE + seed)  # (other weights and other images in each run)
    model = fasterrcnn_mobilenet_v3_large_320_fpn(weights=None, weights_backbone=None).eval()
    with torch.no_grad():
        model([torch.rand(3, 320, 320)])
"""


@pytest.mark.zoo
@pytest.mark.parametrize("mode", [("-p", "no:xdist"), ("-n", "2")], ids=["serial", "n2"])
def test_a_detector_passes_on_any_data_and_says_what_its_hash_leaves_out(pytester, mode):
    pytester.makeini(SUITE_INI)
    pytester.makepyfile(test_detector=DETECTOR.replace("BASE", "0"))
    # (timing off: a detector's replays take seconds, and only the hashes are checked here)
    run = (*mode, "--workload-timing=off", "--workload-snapshot")
    # (in subprocesses: torchvision registers its operators once per process)
    pytester.runpytest_subprocess(*run, "--snapshot-update").assert_outcomes(passed=6)
    for base in ("100", "2000"):  # (12 other seeds against the stored six)
        pytester.makepyfile(test_detector=DETECTOR.replace("BASE", base))
        out = pytester.path / f"r{base}.json"
        gate = pytester.runpytest_subprocess(*run, f"--workload-json={out}")
        gate.assert_outcomes(passed=6)
        for test in json.loads(out.read_text())["tests"]:
            (row,) = test["workloads"]
            assert not row["data_dependent"]
            assert row["compute_partial"].startswith("covers 382 of ")
            # (a library's line, by its module path: the same on every machine)
            where = r", where in rpn at torchvision/\S+\.py:\d+, follows the data"
            assert re.search(where + "$", row["compute_partial"])


SWAP = """
import pytest
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(8, 8), nn.Linear(8, 8)

    def forward(self, x):
        return BODY


@pytest.mark.workloads
def test_swap():
    Net()(torch.rand(1, 8))
"""


FC2 = "linear(float32[1, 8], float32[8, 8]@fc2.weight, float32[8]@fc2.bias)"


def test_two_same_shape_layers_swapped_fail_naming_the_layers(pytester):
    pytester.makeini(SUITE_INI)
    pytester.makepyfile(test_swap=SWAP.replace("BODY", "self.fc2(self.fc1(x))"))
    pytester.runpytest("--workload-snapshot", "--snapshot-update").assert_outcomes(passed=1)
    pytester.makepyfile(test_swap=SWAP.replace("BODY", "self.fc1(self.fc2(x))"))
    result = pytester.runpytest("--workload-snapshot")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        lit(
            "      computation changed (compute hash * -> *)",
            f"      Net: + {FC2} at op 1",
            f"      Net: - {FC2} at op 2",
        )
    )


CAST = """
import pytest
import torch


class Cast(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, t):
        return self.lin(t.CAST() * 2).ACTIVATION().sum(-1)


@pytest.mark.workloads
def test_cast():
    Cast()(torch.ones(2, 4, dtype=torch.float64).CAST())
"""


@pytest.mark.parametrize("cast", ["float", "double", "half", "bool", "int", "long"])
def test_a_dtype_cast_is_an_operation_and_a_later_change_fails(pytester, cast):
    pytester.makeini(SUITE_INI)
    # (on the cast's result the Linear runs in its dtype: a float32 one for every cast but
    # float's, so the cast stands before a float() the Linear can take)
    dtype_fix = "" if cast == "float" else ".float()"

    def write(activation: str) -> None:
        source = CAST.replace("t.CAST()", f"t.{cast}(){dtype_fix}")
        source = source.replace(".CAST()", f".{cast}()").replace("ACTIVATION", activation)
        pytester.makepyfile(test_cast=source)

    write("relu")
    pytester.runpytest("--workload-snapshot", "--snapshot-update").assert_outcomes(passed=1)
    path = pytester.path / "__workload_snapshots__" / "test_cast" / "test_cast.workloads"
    stored = json.loads(path.read_text())
    (ops,) = stored["computations"].values()
    assert ops[0].startswith(f"{cast}(") and ops[-1].startswith("sum(")
    assert not any(op.endswith(" -> follows the data") for op in ops)
    write("sigmoid")
    result = pytester.runpytest("--workload-snapshot")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*computation changed*", "*relu -> sigmoid at op *"])


VALUES = """
import pytest
import torch


class Ramp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, t):
        y = self.lin(t)
        v = y[0, 0].detach()
        return (y + FACTORY).ACTIVATION().sum(-1)


@pytest.mark.workloads
def test_ramp():
    Ramp()(torch.rand(2, 4))
"""


@pytest.mark.parametrize("factory", ["torch.linspace(v, 1.0, 4)", "torch.full((2, 4), v)"])
def test_a_data_tensor_that_sets_values_not_the_shape_is_hashed_past(pytester, factory):
    pytester.makeini(SUITE_INI)

    def write(activation: str) -> None:
        source = VALUES.replace("FACTORY", factory).replace("ACTIVATION", activation)
        pytester.makepyfile(test_ramp=source)

    write("relu")
    pytester.runpytest("--workload-snapshot", "--snapshot-update").assert_outcomes(passed=1)
    write("sigmoid")
    result = pytester.runpytest("--workload-snapshot")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*computation changed*", "*relu -> sigmoid at op *"])
