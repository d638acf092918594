"""Compile health observed from the test's own ``torch.compile`` (backends eager and
aot_eager): graph breaks by site and registry id, recompiles by site and guard, graphs; the
observation leaves dynamo, its loggers and its counters as without it; and the gate's rule on
stored and recorded health."""

from __future__ import annotations

import importlib.util
import itertools
import logging
import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch

from pytest_workload import WorkloadRecorder
from pytest_workload._compile.health import CompileHealth, GraphBreak, Recompile, health_changes
from pytest_workload._core.errors import WorkloadDataError
from pytest_workload._torch_internals import compile_callbacks, graph_break_loggers

SOURCE = """
import torch
from torch import nn

STEP = 0


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self._step = 1

    def forward(self, x):
        x = self.fc(x.float())
        BODY
        return x.relu()
"""

_fresh = itertools.count()


def fresh_model(tmp_path: Path, body: str = "pass") -> ModuleType:
    """A module of its own file, so that dynamo has compiled none of its code yet."""
    path = tmp_path / f"model_{next(_fresh)}.py"
    path.write_text(SOURCE.replace("BODY", body), encoding="utf-8")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def record(tmp_path: Path, module: torch.nn.Module, calls) -> list:
    recorder = WorkloadRecorder("t", rootdir=tmp_path)
    with recorder.recording(all_roots=False):
        recorder.track(module)
        for call in calls:
            call()
    return [w.compile_health for w in recorder.workloads()]


def line_of(tmp_path: Path, text: str) -> int:
    lines = SOURCE.replace("BODY", text).splitlines()
    return next(n for n, line in enumerate(lines, 1) if text in line)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_a_whole_graph_module_has_one_graph_and_nothing_else(tmp_path, backend):
    model = torch.compile(fresh_model(tmp_path).Net(), backend=backend)
    x = torch.rand(2, 4)
    [health] = record(tmp_path, model, [lambda: model(x), lambda: model(x)])
    assert health == CompileHealth(graphs=1)
    assert health.whole_graph


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_a_print_is_a_break_at_its_line_with_its_registry_id(tmp_path, backend):
    source = fresh_model(tmp_path, 'print("step")')
    model = torch.compile(source.Net(), backend=backend)
    [health] = record(tmp_path, model, [lambda: model(torch.rand(2, 4))])
    [found] = health.breaks
    assert (found.site, found.function) == (f"{source.__name__}.py:16", "forward")
    assert (found.kind, found.reason) == ("GB0059", "Failed to trace builtin operator")
    assert "print" in (found.hint or "")
    assert health.graphs == 2 and not health.whole_graph


def test_a_data_dependent_branch_is_a_break_at_the_branch(tmp_path):
    source = fresh_model(tmp_path, "x = x * 2 if x.sum() > 0 else x")
    model = torch.compile(source.Net(), backend="aot_eager")
    [health] = record(tmp_path, model, [lambda: model(torch.rand(2, 4))])
    [found] = health.breaks
    assert found.site == f"{source.__name__}.py:16" and found.reason == "Data-dependent branching"
    assert found.kind.startswith("GB")


def test_an_int_that_changes_per_call_recompiles_at_the_line_that_reads_it(tmp_path):
    source = fresh_model(tmp_path, "x = x * self._step")
    net = source.Net()
    model = torch.compile(net, backend="eager")
    x = torch.rand(2, 4)

    def call(step: int):
        net._step = step
        model(x)

    [health] = record(tmp_path, model, [lambda: call(1), lambda: call(2), lambda: call(3)])
    [found] = health.recompiles
    assert found.site == f"{source.__name__}.py:16" and found.count == 2
    assert found.guard == "self._step == 1"  # (as first seen)
    assert "integer attributes" in (found.hint or "")
    assert health.graphs == 3


def test_an_input_of_another_dtype_recompiles_on_its_own_workload(tmp_path):
    source = fresh_model(tmp_path)
    model = torch.compile(source.Net(), backend="eager")
    x = torch.rand(2, 4)
    first, second = record(tmp_path, model, [lambda: model(x), lambda: model(x.double())])
    assert first == CompileHealth(graphs=1)
    [found] = second.recompiles
    assert found.guard == "tensor 'x' dtype mismatch. expected Float, actual Double"
    assert (found.site, found.function) == (f"{source.__name__}.py:14", "forward")


def test_a_class_compiled_before_the_test_is_not_observed(tmp_path):
    source = fresh_model(tmp_path)
    x = torch.rand(2, 4)
    torch.compile(source.Net(), backend="eager")(x)  # (an earlier test's compile)
    model = torch.compile(source.Net(), backend="eager")
    assert record(tmp_path, model, [lambda: model(x)]) == [None]


def test_a_plain_module_imports_no_dynamo():
    code = (
        "import sys, torch\n"
        "from pytest_workload import WorkloadRecorder\n"
        "r = WorkloadRecorder('t')\n"
        "with r.recording(all_roots=True):\n"
        "    torch.nn.Linear(2, 2)(torch.rand(1, 2))\n"
        "assert len(r.workloads()) == 1\n"
        "assert 'torch._dynamo' not in sys.modules\n"
    )
    import subprocess

    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def _dynamo_state() -> tuple[object, ...]:
    loggers, checker = graph_break_loggers()
    callbacks = compile_callbacks()
    return (
        [
            (log.level, log.propagate, list(log.handlers), log.isEnabledFor(logging.DEBUG))
            for log in loggers
        ],
        list(checker.set),
        list(callbacks.start_callbacks),
        list(callbacks.end_callbacks),
    )


def test_the_observation_leaves_loggers_callbacks_and_counters_as_without_it(tmp_path):
    from torch._dynamo.utils import counters

    before = _dynamo_state()
    watched = torch.compile(fresh_model(tmp_path, 'print("a")').Net(), backend="eager")
    plain = torch.compile(fresh_model(tmp_path, 'print("a")').Net(), backend="eager")
    x = torch.rand(2, 4)
    # (the first compile of a process also compiles frames of torch's own: not this test's)
    torch.compile(fresh_model(tmp_path, 'print("a")').Net(), backend="eager")(x)
    start = {k: dict(v) for k, v in counters.items()}
    plain(x)
    unwatched = {
        k: {n: c - start.get(k, {}).get(n, 0) for n, c in v.items()} for k, v in counters.items()
    }
    start = {k: dict(v) for k, v in counters.items()}
    [health] = record(tmp_path, watched, [lambda: watched(x)])
    observed = {
        k: {n: c - start.get(k, {}).get(n, 0) for n, c in v.items()} for k, v in counters.items()
    }
    assert len(health.breaks) == 1
    assert observed == unwatched
    assert _dynamo_state() == before


def test_the_tests_own_graph_break_logs_still_reach_it(tmp_path, caplog):
    torch._logging.set_logs(graph_breaks=True)
    try:
        model = torch.compile(fresh_model(tmp_path, 'print("a")').Net(), backend="eager")
        with caplog.at_level(logging.DEBUG, logger="torch._dynamo"):
            [health] = record(tmp_path, model, [lambda: model(torch.rand(2, 4))])
        assert len(health.breaks) == 1
        assert any("Graph break" in r.getMessage() for r in caplog.records)
    finally:
        torch._logging.set_logs()


def test_error_on_recompile_raises_in_the_test_as_without_the_plugin(tmp_path):
    net = fresh_model(tmp_path, "x = x * self._step").Net()
    model = torch.compile(net, backend="eager")
    x = torch.rand(2, 4)

    def recompile():
        net._step = 5
        model(x)

    refused = pytest.raises(torch._dynamo.exc.RecompileError)
    with torch._dynamo.config.patch(error_on_recompile=True), refused:
        record(tmp_path, model, [lambda: model(x), recompile])


# -- the gate's rule, on data ------------------------------------------------------------


BREAK = GraphBreak("model.py:42", "forward", "GB0059", "Failed to trace builtin operator", "h")
RECOMPILE = Recompile("model.py:17", "forward", "L['self'].step == 3", None)


def test_a_new_break_or_recompile_fails_and_fewer_passes_with_a_note():
    old = CompileHealth(graphs=1)
    broken = CompileHealth(graphs=2, breaks=(BREAK,))
    assert health_changes(old, broken) == [
        (
            True,
            "graph breaks 0 -> 1: new break at model.py:42 in forward "
            "(Failed to trace builtin operator [GB0059]; hint: h)",
        )
    ]
    assert health_changes(broken, old) == [
        (
            False,
            "graph breaks 1 -> 0: no break any more at model.py:42 in forward "
            "(Failed to trace builtin operator [GB0059]; hint: h)",
        )
    ]
    recompiled = CompileHealth(graphs=2, recompiles=(RECOMPILE,))
    assert health_changes(old, recompiled) == [
        (True, "recompiles 0 -> 1: guard failed at model.py:17 in forward: L['self'].step == 3")
    ]


def _grew(old: CompileHealth | None, new: CompileHealth | None) -> bool:
    return any(grew for grew, _ in health_changes(old, new))


def test_a_reworded_reason_or_another_number_in_a_guard_is_no_change():
    reworded = CompileHealth(breaks=(GraphBreak("model.py:42", "forward", "GB0059", "other"),))
    assert not _grew(CompileHealth(breaks=(BREAK,)), reworded)
    other_value = Recompile("model.py:17", "forward", "L['self'].step == 4")
    assert not _grew(
        CompileHealth(recompiles=(RECOMPILE,)), CompileHealth(recompiles=(other_value,))
    )
    twice = Recompile("model.py:17", "forward", "L['self'].step == 4", count=2)
    assert _grew(CompileHealth(recompiles=(RECOMPILE,)), CompileHealth(recompiles=(twice,)))


def test_not_observed_on_either_side_agrees():
    assert health_changes(None, CompileHealth(breaks=(BREAK,))) == []
    assert health_changes(CompileHealth(breaks=(BREAK,)), None) == []


def test_health_reads_back_and_refuses_a_whole_graph_it_does_not_have():
    health = CompileHealth(graphs=2, breaks=(BREAK,), recompiles=(RECOMPILE,), eager_frames=1)
    assert CompileHealth.from_dict(health.to_dict()) == health
    edited = {**CompileHealth(graphs=1, breaks=(BREAK,)).to_dict(), "whole_graph": True}
    with pytest.raises(WorkloadDataError, match="whole_graph"):
        CompileHealth.from_dict(edited)
