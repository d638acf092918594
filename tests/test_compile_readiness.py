"""Compile readiness on request (``@pytest.mark.workloads(compile=...)``, backends eager and
aot_eager): each new eager root is compiled in a forked child that names a graph break, a
recompile from an attribute the forward changes and one from an input of another dtype;
the process that asked is left as it was (dynamo's caches, counters, its import, what it
prints); a child that cannot answer says why, never fails; and the gate on stored readiness.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
import torch
from torch import nn

from pytest_workload import WorkloadRecorder
from pytest_workload._compile.health import CompileHealth, Readiness, readiness_changes
from pytest_workload._compile.observe import ReadyCall, check_readiness
from pytest_workload._core.errors import WorkloadDataError
from pytest_workload._torch_internals import dynamo_cache_size
from tests.pytester_suite import SUITE_INI, compiled_suite, stored_snapshots
from tests.test_compile_health import fresh_model

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="readiness compiles in a fork")

BACKENDS = ["eager", "aot_eager"]


def ready(tmp_path: Path, module: nn.Module, calls, backend: str = "eager") -> list:
    """What ``compile=backend`` records for each root ``calls`` made."""
    recorder = WorkloadRecorder("t", rootdir=tmp_path)
    with recorder.recording(all_roots=False):
        recorder.track(module)
        for call in calls:
            call()
    recorder.compile_backend = backend
    assert recorder.measure(None) == []
    return [w.compile_readiness for w in recorder.workloads()]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_whole_graph_module_is_ready_and_the_parent_compiled_nothing(tmp_path, backend):
    net = fresh_model(tmp_path).Net()
    x = torch.rand(2, 4)
    [found] = ready(tmp_path, net, [lambda: net(x), lambda: net(x)], backend)
    assert found == Readiness(backend, CompileHealth(graphs=1))
    assert dynamo_cache_size(type(net).forward.__code__) == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_print_is_a_break_named_by_site_reason_and_hint(tmp_path, backend, capfd):
    source = fresh_model(tmp_path, 'print("in the forward")')
    net = source.Net()
    [found] = ready(tmp_path, net, [lambda: net(torch.rand(2, 4))], backend)
    [brk] = found.health.breaks
    assert (brk.site, brk.function) == (f"{source.__name__}.py:16", "forward")
    assert (brk.kind, brk.reason) == ("GB0059", "Failed to trace builtin operator")
    assert "print" in (brk.hint or "")
    # the test's own call printed once; the child's calls print nowhere
    assert capfd.readouterr().out.count("in the forward") == 1


def test_an_attribute_the_forward_changes_recompiles_when_called_twice(tmp_path):
    source = fresh_model(tmp_path, "self._step += 1; x = x * self._step")
    net = source.Net()
    x = torch.rand(2, 4)
    single = source.Net()
    [once] = ready(tmp_path, single, [lambda: single(x)])
    assert once is not None and once.health.recompiles == ()
    found = ready(tmp_path, net, [lambda: net(x), lambda: net(x)])
    [recompile] = [r for f in found for r in f.health.recompiles]
    assert recompile.site == f"{source.__name__}.py:16"
    assert recompile.guard.startswith("self._step == ")
    assert "integer attributes" in (recompile.hint or "")


def test_an_input_of_another_dtype_recompiles_on_its_own_workload(tmp_path):
    source = fresh_model(tmp_path)
    net = source.Net()
    x = torch.rand(2, 4)
    first, second = ready(tmp_path, net, [lambda: net(x), lambda: net(x.double())])
    assert first == Readiness("eager", CompileHealth(graphs=1))
    [found] = second.health.recompiles
    assert found.guard == "tensor 'x' dtype mismatch. expected Float, actual Double"
    assert found.site == f"{source.__name__}.py:14"


def test_a_compiled_root_is_not_checked_again(tmp_path):
    net = torch.compile(fresh_model(tmp_path).Net(), backend="eager")
    recorder = WorkloadRecorder("t", rootdir=tmp_path)
    with recorder.recording(all_roots=False):
        recorder.track(net)
        net(torch.rand(2, 4))
    recorder.compile_backend = "eager"
    [line] = recorder.measure(None)
    assert line.endswith(
        ".Net): compile readiness not checked: the test compiles it itself "
        "(its compile health is observed)"
    )
    [workload] = recorder.workloads()
    assert workload.compile_readiness is None and workload.compile_health is not None


def _call(tmp_path: Path, run) -> ReadyCall:
    return ReadyCall(fresh_model(tmp_path).Net(), run, 1)


def test_a_child_that_dies_is_not_checked_with_its_signal(tmp_path):
    found = check_readiness(
        [_call(tmp_path, lambda _: os.kill(os.getpid(), signal.SIGKILL))], "eager", None
    )
    assert found == "not checked: the compiling process died (SIGKILL)"


def test_a_child_past_its_limit_is_killed_and_not_checked(tmp_path):
    found = check_readiness([_call(tmp_path, lambda _: time.sleep(600))], "eager", None, 0.5)
    assert found == "not checked: the compile took longer than 0 s"


def test_a_forward_that_raises_under_compile_is_not_checked(tmp_path):
    def run(compiled: nn.Module) -> object:
        return compiled(torch.rand(2, 5))  # (Linear(4, 4) refuses it)

    found = check_readiness([_call(tmp_path, run)], "aot_eager", None)
    assert isinstance(found, str) and found.startswith("not checked: compiling raised ")


def test_without_fork_it_is_not_checked(tmp_path, monkeypatch):
    monkeypatch.delattr(os, "fork")
    found = check_readiness([_call(tmp_path, lambda m: m(torch.rand(2, 4)))], "eager", None)
    assert found == "not checked: this platform cannot fork a process to compile in"


def test_a_plain_marker_imports_no_dynamo(pytester):
    pytester.makeini(SUITE_INI)
    pytester.makeconftest(
        "import sys\n"
        "def pytest_sessionfinish(session):\n"
        "    print('dynamo imported:', 'torch._dynamo' in sys.modules)\n"
    )
    pytester.makepyfile(
        "import pytest, torch\n"
        "@pytest.mark.workloads(max_depth=1)\n"
        "def test_plain():\n"
        "    torch.nn.Sequential(torch.nn.Linear(2, 2))(torch.rand(1, 2))\n"
    )
    result = pytester.runpytest_subprocess("--workload-snapshot", "--snapshot-update", "-s")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*dynamo imported: False*"])


# -- the gate's rule ---------------------------------------------------------------------


def _with(*, graphs: int = 1, breaks: int = 0, backend: str = "eager") -> Readiness:
    from pytest_workload._compile.health import GraphBreak

    found = tuple(
        GraphBreak(f"net.py:{10 + n}", "forward", "GB0059", "Failed to trace builtin operator")
        for n in range(breaks)
    )
    return Readiness(backend, CompileHealth(graphs + breaks, found))


def test_a_new_break_disagrees_and_a_break_gone_agrees_with_a_line_each():
    clean, broken = _with(), _with(breaks=1)
    assert readiness_changes(clean, broken) == [
        (
            True,
            "compile readiness (eager): graph breaks 0 -> 1: new break at net.py:10 in forward "
            "(Failed to trace builtin operator [GB0059])",
        )
    ]
    [(grew, line)] = readiness_changes(broken, clean)
    assert not grew and line.endswith(
        "no break any more at net.py:10 in forward (Failed to trace builtin operator [GB0059])"
    )
    assert readiness_changes(None, broken) == []


def test_a_backend_change_is_said_and_agrees():
    assert readiness_changes(_with(), _with(backend="aot_eager")) == [
        (False, "compile readiness (aot_eager): backend eager -> aot_eager")
    ]


def test_readiness_reads_back_and_refuses_an_unknown_backend():
    found = _with(breaks=2)
    assert Readiness.from_dict(found.to_dict()) == found
    with pytest.raises(WorkloadDataError, match="'backend' must be one of eager, aot_eager"):
        Readiness.from_dict({**found.to_dict(), "backend": "inductor"})


# -- end to end ----------------------------------------------------------------------------

MODEL = """
import pytest
import torch
from torch import nn


class NetNAME(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        x = self.fc(x.float())
        BODY
        return x.relu()


@pytest.mark.workloads(compile="BACKEND")
def test_netNAME():
    net = NetNAME()
    for step in range(3):
        CALL
"""

_LINES = MODEL.strip().splitlines()
BODY_LINE = _LINES.index("        BODY") + 1
FORWARD_LINE = _LINES.index("    def forward(self, x):") + 1
CALL = "net(torch.rand(2, 4))"


@pytest.fixture
def net(pytester: pytest.Pytester):
    return compiled_suite(pytester, MODEL, CALL)


@pytest.mark.parametrize("backend", BACKENDS)
def test_whole_graph_then_a_print_fails_naming_the_site(pytester, net, backend):
    net(backend=backend)
    stored = stored_snapshots(pytester)
    assert f'"compile_readiness": {{"backend": "{backend}", "graphs": 1, "whole_graph": true' in (
        stored
    )
    pytester.runpytest("--workload-snapshot").assert_outcomes(passed=1)
    net('print("step")', backend=backend)
    result = pytester.runpytest("--workload-snapshot")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            f"*compile readiness ({backend}): graph breaks 0 -> 1: new break at "
            f"test_net.py:{BODY_LINE} in forward (Failed to trace builtin operator ?GB0059?; "
            "hint: Avoid calling builtin `print`*"
        ]
    )
    result.stdout.no_fnmatch_line("*step*step*")  # (the child printed nowhere)


def test_an_attribute_the_forward_changes_fails_as_a_recompile(pytester, net):
    net()
    stored_snapshots(pytester)
    net("self.n = getattr(self, 'n', 0) + 1; x = x * self.n")
    result = pytester.runpytest("--workload-snapshot")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [f"*compile readiness (eager): recompiles 0 -> 1: guard failed at test_net.py:{BODY_LINE}*"]
    )


def test_an_input_of_another_dtype_fails_naming_the_guard(pytester, net):
    net()
    stored_snapshots(pytester)
    net(call="net(torch.rand(2, 4, dtype=torch.float64 if step == 2 else torch.float32))")
    result = pytester.runpytest("--workload-snapshot")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*compile readiness (eager): recompiles 0 -> 1: guard failed at "
            f"test_net.py:{FORWARD_LINE} in forward: tensor 'x' dtype mismatch. "
            "expected Float, actual Double"
        ]
    )


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "n2"])
def test_unchanged_reruns_pass(pytester, net, workers):
    net(backend="aot_eager", names=("A", "B"))
    assert stored_snapshots(pytester, *workers, passed=2).count('"whole_graph": true') == 2
    pytester.runpytest("--workload-snapshot", *workers).assert_outcomes(passed=2)


LATER = """

def test_later_compile():
    import torch._dynamo

    torch._dynamo.config.error_on_recompile = True
    net = NetA()
    net.scale = 2  # (a compile of NetA left behind, guarded on scale == 1, would recompile)
    try:
        model = torch.compile(net, backend="eager")
        model(torch.rand(2, 4))
        model(torch.rand(2, 4))
    finally:
        torch._dynamo.config.error_on_recompile = False
"""


@pytest.mark.parametrize(
    "args",
    [("--workload-snapshot", "--snapshot-update"), ("-p", "no:workload")],
    ids=["on", "off"],
)
def test_a_later_test_compiling_the_same_class_sees_no_trace(pytester, net, args):
    net("x = x * getattr(self, 'scale', 1)", names=("A",))
    source = pytester.path / "test_net.py"
    source.write_text(source.read_text() + LATER)
    pytester.runpytest_subprocess(*args).assert_outcomes(passed=2)


# -- a real model --------------------------------------------------------------------------


class LoudReLU(nn.ReLU):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        print("activation")  # the injected break
        return super().forward(x)


@pytest.mark.zoo
def test_resnet18_is_ready_until_a_print_is_injected():
    import timm

    root = Path(__file__).resolve().parent.parent
    model = timm.create_model("resnet18", pretrained=False).eval()
    x = torch.rand(1, 3, 224, 224)
    with torch.no_grad():
        [clean] = ready(root, model, [lambda: model(x)], "aot_eager")
        model.layer1[0].act1 = LoudReLU()
        [broken] = ready(root, model, [lambda: model(x)], "aot_eager")
    assert clean == Readiness("aot_eager", CompileHealth(graphs=1))
    at = LoudReLU.forward.__code__.co_firstlineno + 1
    grew, line = readiness_changes(clean, broken)[0]
    assert grew and f"new break at tests/test_compile_readiness.py:{at} in forward " in line


def test_aot_eager_is_checked_in_a_process_that_ran_a_backward(tmp_path):
    # (autograd's threads, once started, cannot run in a forked child: the child compiles
    # without grad)
    torch.compile(nn.Linear(2, 2), backend="aot_eager")(torch.rand(1, 2)).sum().backward()
    net = fresh_model(tmp_path).Net()
    x = torch.rand(2, 4)
    [found] = ready(tmp_path, net, [lambda: net(x)], "aot_eager")
    assert found == Readiness("aot_eager", CompileHealth(graphs=1))
