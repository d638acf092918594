"""End-to-end: the snapshot gate fails on a cost that grew, under any load, and names it."""

from __future__ import annotations

import json

import pytest

from tests.pytester_suite import SUITE_INI, lit

MODEL = """
import pytest
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 1)

    def forward(self, x):
        BODY


@pytest.mark.workloads
def test_net():
    with torch.no_grad():
        Net().eval()(torch.rand(1, 4, 8, 8))
"""

PLAIN = "y = self.conv(x).permute(0, 2, 3, 1); return y.sum(dim=-1)"
CONTIGUOUS = "y = self.conv(x).permute(0, 2, 3, 1).contiguous(); return y.sum(dim=-1)"
WORKSPACE = (
    "w = torch.empty(16 * 1024 * 1024); y = self.conv(x).permute(0, 2, 3, 1); return y.sum(dim=-1)"
)
KEEPS = "a = x * 2; b = a * 2; c = b * 2; return c"
FREES = "a = x * 2; b = a * 2; del a; c = b * 2; return c"


@pytest.fixture
def net(pytester: pytest.Pytester):
    pytester.makeini(SUITE_INI)

    def write(body: str) -> None:
        pytester.makepyfile(test_net=MODEL.replace("BODY", body))

    return write


def _stored(pytester: pytest.Pytester, net, body: str) -> None:
    net(body)
    pytester.runpytest("--workload-snapshot", "--snapshot-update").assert_outcomes(passed=1)
    stored = pytester.path / "__workload_snapshots__" / "test_net" / "test_net.workloads"
    assert '"costs": {"bytes_read"' in stored.read_text()


def test_unchanged_model_passes(pytester, net):
    _stored(pytester, net, PLAIN)
    pytester.runpytest("--workload-snapshot").assert_outcomes(passed=1)


def test_contiguous_copy_fails_with_bytes_and_memory_beside_the_compute_change(pytester, net):
    _stored(pytester, net, PLAIN)
    net(CONTIGUOUS)
    result = pytester.runpytest("--workload-snapshot")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        lit(
            "*computation changed (compute hash * -> *)",
            "*Net: + contiguous(float32[1, 8, 8, 4]) at op 3",
            # conv's 1 KiB output and the sum's 256 B; then the copy beside conv's output
            "*peak memory 1.2 KiB -> 2.0 KiB (+768 B, 1.60x)",
            "*bytes written 1.2 KiB -> 2.2 KiB (+1.0 KiB, 1.80x)",
            "*bytes read 2.1 KiB -> 3.1 KiB (+1.0 KiB, 1.48x)",
            "*operations +1 contiguous",
        )
    )


def test_workspace_it_does_not_return_fails_on_memory(pytester, net):
    _stored(pytester, net, PLAIN)
    net(WORKSPACE)
    result = pytester.runpytest("--workload-snapshot")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*computation changed*",
            "*peak memory * -> 64.* MiB (+64.0 MiB, *x)",
            "*operations +1 empty",
        ]
    )


def test_an_intermediate_kept_alive_fails_on_peak_memory_alone(pytester, net):
    _stored(pytester, net, FREES)
    net(KEEPS)
    result = pytester.runpytest("--workload-snapshot")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*peak memory 2.0 KiB -> 3.0 KiB (+1.0 KiB, 1.50x)"])
    assert "computation changed" not in result.stdout.str()
    assert "bytes written" not in result.stdout.str()


def test_growth_within_the_tolerance_passes(pytester, net):
    _stored(pytester, net, FREES)
    net(KEEPS)
    result = pytester.runpytest("--workload-snapshot", "--workload-cost-tolerance=0.5")
    result.assert_outcomes(passed=1)


def test_shrinking_passes_with_a_note_and_an_update_records_it(pytester, net):
    _stored(pytester, net, KEEPS)
    net(FREES)
    result = pytester.runpytest("--workload-snapshot")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["*costs shrank in *test_net.workloads (--snapshot-update records them): "
         "Net: peak memory 3.0 KiB -> 2.0 KiB (-1.0 KiB, 0.67x)*"]
    )  # fmt: skip
    update = pytester.runpytest("--workload-snapshot", "--snapshot-update")
    update.assert_outcomes(passed=1)
    update.stdout.fnmatch_lines(["*costs shrank in *test_net.workloads (recorded): *"])
    again = pytester.runpytest("--workload-snapshot")
    again.assert_outcomes(passed=1)
    assert "costs shrank" not in again.stdout.str()


SYNCS = """
import pytest
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        y = self.fc(x)
        BODY
        return y


@pytest.mark.workloads
def test_net():
    with torch.no_grad():
        Net().eval()(torch.rand(2, 4))
"""

FIRST = "scale = y.abs().max().item()"
SECOND = "nonzero = int(y.gt(0).sum())"


@pytest.fixture
def synced(pytester: pytest.Pytester):
    """Writes the model with the given lines in its forward; returns the line of each."""
    pytester.makeini(SUITE_INI)

    def write(*lines: str) -> dict[str, str]:
        body = "\n        ".join(lines) or "pass"
        path = pytester.makepyfile(test_net=SYNCS.replace("BODY", body))
        text = path.read_text().splitlines()
        return {line: f"test_net.py:{text.index('        ' + line) + 1}" for line in lines}

    return write


def _update(pytester: pytest.Pytester) -> None:
    pytester.runpytest("--workload-snapshot", "--snapshot-update").assert_outcomes(passed=1)


@pytest.mark.parametrize("mode", [("-p", "no:xdist"), ("-n", "2")], ids=["serial", "n2"])
def test_unchanged_syncs_pass_and_are_stored_by_site(pytester, synced, mode):
    sites = synced(FIRST)
    _update(pytester)
    stored = pytester.path / "__workload_snapshots__" / "test_net" / "test_net.workloads"
    assert f'"syncs": {{"item at {sites[FIRST]}": 1}}' in stored.read_text()
    result = pytester.runpytest_subprocess("--workload-snapshot", "--workload-json=r.json", *mode)
    result.assert_outcomes(passed=1)
    (test,) = json.loads((pytester.path / "r.json").read_text())["tests"]
    assert [w["costs"]["syncs"] for w in test["workloads"]] == [{f"item at {sites[FIRST]}": 1}]


def test_a_new_item_fails_naming_its_line(pytester, synced):
    synced()
    _update(pytester)
    sites = synced(FIRST)
    result = pytester.runpytest("--workload-snapshot")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*syncs 0 -> 1: item at {sites[FIRST]}"])


def test_a_second_sync_in_a_data_dependent_forward_fails_on_syncs_alone(pytester, synced):
    synced(FIRST)
    _update(pytester)
    sites = synced(FIRST, SECOND)
    result = pytester.runpytest("--workload-snapshot")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*syncs 1 -> 2: int at {sites[SECOND]}"])
    assert "computation changed" not in result.stdout.str()


def test_fewer_syncs_pass_with_a_note_and_an_update_records_them(pytester, synced):
    sites = synced(FIRST, SECOND)
    _update(pytester)
    synced(FIRST)
    result = pytester.runpytest("--workload-snapshot")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [f"*costs shrank in *(--snapshot-update records them): Net: syncs 2 -> 1: "
         f"int at {sites[SECOND]}*"]
    )  # fmt: skip
    _update(pytester)
    again = pytester.runpytest("--workload-snapshot")
    again.assert_outcomes(passed=1)
    assert "costs shrank" not in again.stdout.str()
