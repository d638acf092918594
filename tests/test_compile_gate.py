"""End-to-end: a test that compiles its own model (backends eager and aot_eager) stores its
compile health in the snapshot; a new graph break, a recompile from an int that changes per
call, and an input of another dtype each fail, naming the site; unchanged reruns pass, also
under ``-n 2``; a break that went away is a note.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from tests.pytester_suite import compiled_suite, stored_snapshots

MODEL = """
import pytest
import torch
from torch import nn


class NetNAME(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self._step = 1

    def forward(self, x):
        x = self.fc(x.float())
        BODY
        return x.relu()


@pytest.mark.workloads
def test_netNAME():
    net = NetNAME()
    model = torch.compile(net, backend="BACKEND")
    for step in range(3):
        CALL
"""

#: The lines of BODY (in the model's forward) and of ``def forward`` in the test file.
_LINES = MODEL.strip().splitlines()
BODY_LINE, FORWARD_LINE = (
    _LINES.index("        BODY") + 1,
    _LINES.index("    def forward(self, x):") + 1,
)
SCALE = "x = x * self._step"
CALL = "model(torch.rand(2, 4))"


@pytest.fixture(scope="module", autouse=True)
def _dynamo_loaded() -> None:
    """Dynamo registers operator libraries as it first compiles; an in-process run drops the
    modules it imported, and the next would register them twice: compile here first."""
    for backend in ("eager", "aot_eager"):
        torch.compile(nn.Linear(2, 2), backend=backend)(torch.rand(1, 2))


@pytest.fixture
def net(pytester: pytest.Pytester):
    return compiled_suite(pytester, MODEL, CALL)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_a_new_graph_break_fails_naming_its_site_reason_and_hint(pytester, net, backend):
    net(backend=backend)
    stored = stored_snapshots(pytester)
    assert '"compile": {"graphs": 1, "whole_graph": true, "graph_breaks": []' in stored
    pytester.runpytest("--workload-snapshot").assert_outcomes(passed=1)
    net('print("step")', backend=backend)
    result = pytester.runpytest("--workload-snapshot")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            f"*graph breaks 0 -> 1: new break at test_net.py:{BODY_LINE} in forward "
            "(Failed to trace builtin operator ?GB0059?; hint: Avoid calling builtin `print`*"
        ]
    )


def test_a_break_that_went_away_passes_with_a_note(pytester, net):
    net('print("step")')
    stored_snapshots(pytester)
    net()
    result = pytester.runpytest("--workload-snapshot")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [f"*graph breaks 1 -> 0: no break any more at test_net.py:{BODY_LINE} in forward*"]
    )


def test_an_int_attribute_that_changes_per_call_fails_as_a_recompile(pytester, net):
    net(SCALE)
    stored_snapshots(pytester)
    net(SCALE, call=f"net._step = step + 1; {CALL}")
    result = pytester.runpytest("--workload-snapshot")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            f"*recompiles 0 -> 2: guard failed at test_net.py:{BODY_LINE} in forward: "
            "self._step == 1 (hint: torch.compile considers integer attributes*) (0 -> 2 times)"
        ]
    )


def test_an_input_of_another_dtype_fails_as_a_recompile_of_its_own_workload(pytester, net):
    net()
    stored_snapshots(pytester)
    net(call="model(torch.rand(2, 4, dtype=torch.float64 if step == 2 else torch.float32))")
    result = pytester.runpytest("--workload-snapshot")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            f"*recompiles 0 -> 1: guard failed at test_net.py:{FORWARD_LINE} in forward: "
            "tensor 'x' dtype mismatch. expected Float, actual Double"
        ]
    )


def test_under_two_workers_reruns_pass_and_a_break_fails(pytester, net):
    names = ("A", "B")
    net(names=names)
    assert stored_snapshots(pytester, "-n", "2", passed=2).count('"whole_graph": true') == 2
    pytester.runpytest("--workload-snapshot", "-n", "2").assert_outcomes(passed=2)
    net('print("step")', names=names)
    result = pytester.runpytest("--workload-snapshot", "-n", "2")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*graph breaks 0 -> 1: new break at test_net.py:*"])
