"""Settled roots: once a root's observed calls ran the same submodule calls, its later calls
run the submodules unhooked and count their calls from the observed ones."""

import pytest
import torch
from torch import nn

from pytest_workload import WorkloadRecorder
from pytest_workload._recording.states import OBSERVED_CALLS, TRACED_CALLS
from pytest_workload._workload.timing import OBSERVED
from tests.recording import no_hooks_left

#: calls after which a root whose calls all agree has settled
SETTLED = TRACED_CALLS + OBSERVED_CALLS


def _rows(recorder):
    return {w.name: w for w in recorder.workloads()}


def _hooked_in_calls(module: nn.Module) -> list[bool]:
    """Whether each call of ``module`` runs with a hook besides this probe's."""
    seen: list[bool] = []
    module.register_forward_pre_hook(lambda m, args: seen.append(len(m._forward_pre_hooks) > 1))
    return seen


def test_a_settled_root_counts_its_submodules_calls_and_says_which_were_timed():
    model = nn.Sequential(nn.Linear(2, 2), nn.ReLU()).eval()
    recorder = WorkloadRecorder("t", max_depth=1)
    hooked, root_hooked = _hooked_in_calls(model[0]), _hooked_in_calls(model)
    with recorder.recording(all_roots=True):
        for _ in range(SETTLED + 10):
            model(torch.rand(1, 2))
    assert hooked == [True] * SETTLED + [False] * 10
    assert all(root_hooked)  # (the root keeps its own)
    rows = _rows(recorder)
    assert {name: w.calls for name, w in rows.items()} == {"model": 15, "0": 15, "1": 15}
    sub = rows["0"]
    assert sub.timing is not None and sub.timing.n == OBSERVED_CALLS
    assert sub.total_time_s is None  # (its calls were not all timed)
    assert sub.measured is not None
    assert sub.measured.timing.kind == "observed calls"
    assert str(sub.measured.timing.reason).startswith(f"{OBSERVED_CALLS} of 15: ")
    assert rows["model"].total_time_s is not None
    assert [len(m._forward_pre_hooks) for m in model] == [1, 0]  # (the probe)
    assert not any(m._forward_hooks for m in model.modules())


def test_a_root_called_fewer_times_times_its_submodules_from_every_untraced_call():
    model = nn.Sequential(nn.Linear(2, 2)).eval()
    recorder = WorkloadRecorder("t", max_depth=1)
    with recorder.recording(all_roots=True):
        for _ in range(TRACED_CALLS + 2):
            model(torch.rand(1, 2))
    sub = _rows(recorder)["0"]
    assert sub.calls == TRACED_CALLS + 2 and sub.timing is not None and sub.timing.n == 2
    assert sub.measured is not None and sub.measured.timing == OBSERVED
    assert sub.total_time_s is not None


def test_submodules_of_a_root_whose_calls_were_all_traced_are_not_timed():
    model = nn.Sequential(nn.Linear(2, 2)).eval()
    recorder = WorkloadRecorder("t", max_depth=1)
    with recorder.recording(all_roots=True):
        for _ in range(TRACED_CALLS):
            model(torch.rand(1, 2))
    sub = _rows(recorder)["0"]
    assert sub.timing is None
    assert sub.measured is not None and "traced" in str(sub.measured.timing.reason)


def test_a_submodule_called_at_top_level_after_its_root_settled_is_recorded():
    model = nn.Sequential(nn.Linear(2, 2), nn.ReLU()).eval()
    recorder = WorkloadRecorder("t", max_depth=1)
    with recorder.recording(all_roots=True):
        for _ in range(SETTLED + 1):
            model(torch.rand(1, 2))
        model[0](torch.rand(3, 2))
        model[0](torch.rand(3, 2))
        for _ in range(3):
            model(torch.rand(1, 2))
    roots = [(w.name, w.input_signature.format(), w.calls) for w in recorder.workloads().roots()]
    assert roots == [("model", "(float32[1, 2])", SETTLED + 4), ("Linear", "(float32[3, 2])", 2)]
    assert _rows(recorder)["0"].calls == SETTLED + 4
    assert no_hooks_left(model)


def test_a_root_whose_submodule_calls_vary_never_settles_and_counts_them_all():
    class Repeats(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2)
            self._times = 1  # (private: not part of the structure)

        def forward(self, x):
            for _ in range(self._times):
                x = self.lin(x)
            return x

    model = Repeats().eval()
    recorder = WorkloadRecorder("t", max_depth=1)
    hooked = _hooked_in_calls(model.lin)
    with recorder.recording(all_roots=True):
        for i in range(12):
            model._times = 1 + i % 2
            model(torch.rand(1, 2))
    assert all(hooked)
    assert _rows(recorder)["lin"].calls == sum(1 + i % 2 for i in range(12))


def test_with_a_key_hook_every_submodule_call_is_keyed():
    model = nn.Sequential(nn.Linear(2, 2)).eval()
    recorder = WorkloadRecorder("t", max_depth=1, keyer=lambda m, a, k: type(m).__name__)
    with recorder.recording(all_roots=True):
        for _ in range(SETTLED + 5):
            model(torch.rand(1, 2))
    (key,) = _rows(recorder)["0"].user_keys
    assert key.calls == SETTLED + 5


def test_recursion_through_a_settled_root_ends_each_call_where_it_began():
    class Recursive(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2)

        def forward(self, x, n=2):
            y = self(x, n - 1) if n > 0 else x
            return self.lin(y)  # (after the inner call ended, within the outer one)

    model = Recursive().eval()
    recorder = WorkloadRecorder("t", max_depth=1)
    with recorder.recording(all_roots=True):
        outputs = [model(torch.ones(1, 2)) for _ in range(SETTLED + 3)]
    assert all(torch.equal(o, outputs[0]) for o in outputs)
    assert recorder.errors == ()
    assert [w.calls for w in recorder.workloads().roots()] == [SETTLED + 3]
    assert no_hooks_left(model)


def _replace_weight(model: nn.Module) -> None:
    model[0].weight = nn.Parameter(model[0].weight.detach().double())


#: a change between two calls, made to the model (returning nothing) or to its inputs
CHANGES = {
    "inputs": lambda m, ids: torch.tensor([[1, 2]]),
    "input dtype": lambda m, ids: ids.int(),
    "parameters cast in place": lambda m, ids: m.half() and ids,
    "train mode": lambda m, ids: m.train() and ids,
    "attribute": lambda m, ids: setattr(m[1], "p", 0.5) or ids,
    "new attribute": lambda m, ids: setattr(m[0], "scale", 2) or ids,
    "parameter replaced": lambda m, ids: _replace_weight(m) or ids,
    "submodule replaced": lambda m, ids: setattr(m, "1", nn.Identity()) or ids,
}


@pytest.mark.parametrize("change", CHANGES.values(), ids=CHANGES.keys())
def test_a_settled_root_sees_a_change_between_calls(change):
    model = nn.Sequential(nn.Embedding(10, 4), nn.Dropout(0.1)).eval()
    ids = torch.tensor([[1, 2, 3]])
    recorder = WorkloadRecorder("t", max_depth=0)
    with recorder.recording(all_roots=True):
        for _ in range(SETTLED + 2):
            model(ids)
        changed = change(model, ids)
        for _ in range(SETTLED + 2):
            model(changed)
    first, second = recorder.workloads().roots()
    assert first.hash != second.hash
    assert (first.calls, second.calls) == (SETTLED + 2, SETTLED + 2)
    assert recorder.errors == ()
    assert no_hooks_left(model)


def test_a_settled_roots_call_that_raises_is_not_counted():
    class Flaky(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2)
            self._fail = False  # (private: not part of the structure)

        def forward(self, x):
            if self._fail:
                raise ValueError("boom")
            return self.lin(x)

    model = Flaky().eval()
    x = torch.rand(1, 2)
    recorder = WorkloadRecorder("t", max_depth=0)
    with recorder.recording(all_roots=True):
        for _ in range(SETTLED + 2):
            model(x)
        model._fail = True
        with pytest.raises(ValueError, match="boom"):
            model(x)
        assert not model._forward_pre_hooks and not model._forward_hooks
        model._fail = False
        model(x)
    (root,) = recorder.workloads().roots()
    assert root.calls == SETTLED + 3
    assert recorder.errors == ()
