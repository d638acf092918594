"""The computation fingerprint through the pure core: operation texts, compute hashes, FLOPs
counted by the function mode, writes outside the module, and the op-level diff."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from pytest_workload import TestWorkloads, Workload, WorkloadRecorder
from pytest_workload._core.errors import WorkloadDataError
from pytest_workload._core.strict_json import load_json
from pytest_workload._snapshot.diff import compare_tables, explain
from pytest_workload._snapshot.part_diff import diff_operations
from pytest_workload._snapshot.snapshot_files import snapshot_text
from pytest_workload._tracing.cost_count import counting
from pytest_workload._tracing.operations import call_text, op_name
from pytest_workload._tracing.tracer import count_flops, tracing
from pytest_workload._workload.computation import Computation, SubCall, read_computations
from tests.models import TinyNet


def recorded(calls, max_depth=0):
    recorder = WorkloadRecorder("t", max_depth=max_depth, timing=False)
    with recorder.recording(all_roots=True):
        calls()
    assert not recorder.errors, recorder.errors
    recorder.measure(None)
    return recorder.workloads().workloads


class Act(nn.Module):
    def __init__(self, act=F.relu, dim=1, eps=1e-5, residual=False):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.act, self.dim, self.eps, self.residual = act, dim, eps, residual

    def forward(self, x):
        y = self.act(self.fc(x))
        y = torch.cat([y, y], dim=self.dim)
        y = F.layer_norm(y, y.shape[-1:], eps=self.eps)
        return y + 1 if self.residual else y


def compute_hash(model, *inputs, max_depth=0):
    (root, *_) = recorded(lambda: model(*inputs), max_depth)
    assert root.compute_hash is not None, root.compute_unknown
    return root.compute_hash


def op_text(func, args, kwargs):
    return call_text(op_name(func), args, kwargs, lambda tensor: None)


def test_operation_text_names_the_operation_and_its_arguments():
    x = torch.rand(2, 3)
    assert op_text(F.gelu, (x,), {}) == "gelu(float32[2, 3])"
    assert op_text(torch.cat, ([x, x],), {"dim": 1}) == "cat([float32[2, 3], float32[2, 3]], dim=1)"
    assert op_text(torch.Tensor.__add__, (x, 2.5), {}) == "add(float32[2, 3], 2.5)"
    assert op_text(torch.Tensor.__getitem__, (x, (slice(None), 0)), {}) == (
        "getitem(float32[2, 3], (::, 0))"
    )


@pytest.mark.parametrize(
    "change",
    [{"act": F.gelu}, {"dim": 0}, {"eps": 1e-6}, {"residual": True}],
    ids=["gelu", "dim", "eps", "residual"],
)
def test_a_changed_operation_or_argument_changes_the_compute_hash(change):
    x = torch.rand(2, 4)
    assert compute_hash(Act(**change), x) != compute_hash(Act(), x)


def test_weights_seeds_and_devices_never_change_the_compute_hash():
    x = torch.rand(2, 4)
    torch.manual_seed(0)
    a = Act()
    torch.manual_seed(1)
    b = Act()
    with torch.no_grad():
        b.fc.weight.mul_(3.0)
    assert compute_hash(a, x) == compute_hash(b, x) == compute_hash(a, torch.rand(2, 4) * 9)


def test_a_parent_covers_its_children_at_any_depth():
    model, x = TinyNet().eval(), torch.rand(1, 3, 8, 8)
    flat = compute_hash(model, x, max_depth=0)
    rows = recorded(lambda: model(x), max_depth=2)
    assert rows[0].compute_hash == flat
    stem = next(w for w in rows if w.name == "stem")
    assert stem.computation is not None and stem.computation.flat[0].startswith("conv2d(")
    assert rows[0].computation is not None
    assert any(isinstance(i, SubCall) and i.name == "stem" for i in rows[0].computation.items)


def _line_of(function, offset: int) -> str:
    """``path:line`` of a line of ``function``, as the tracer names the code that ran an event
    (a recorder given no rootdir: relative to the ``sys.path`` directory that holds the file,
    here the repository's root, as the tests are imported as ``tests.…``)."""
    path = os.path.relpath(inspect.getsourcefile(function), Path(__file__).resolve().parents[1])
    return f"{path}:{inspect.getsourcelines(function)[1] + offset}"


class Branchy(nn.Module):
    def forward(self, x):
        return torch.relu(x) if x.sum() > 0 else torch.tanh(x)


def test_a_branch_on_the_data_ends_the_computation_so_either_branch_hashes_the_same():
    model, pos = Branchy(), torch.ones(1, 4)
    (steady,) = recorded(lambda: [model(pos) for _ in range(3)])
    assert steady.compute_hash is not None and not steady.data_dependent
    assert steady.computation.flat == (
        "sum(float32[1, 4])",
        "gt(float32[], 0)",
        "bool(bool[]) -> follows the data",
    )
    assert steady.computation.coverage() == (
        f"covers 3 of 4 operations: op 3, bool at {_line_of(Branchy.forward, 1)}, follows the data"
    )
    (branchy,) = recorded(lambda: [model(-pos), model(pos)])
    assert branchy.compute_hash == steady.compute_hash and not branchy.data_dependent


class Flips(nn.Module):
    """Branches on a Python value the tracer cannot see: two traced calls differ."""

    def __init__(self):
        super().__init__()
        self.order = iter([True, False, True])

    def forward(self, x):
        return torch.relu(x) if next(self.order) else torch.tanh(x)


def test_two_traced_calls_that_ran_different_operations_mark_it_data_dependent():
    model, x = Flips(), torch.ones(1, 4)
    (flips,) = recorded(lambda: [model(x), model(x)])
    assert flips.data_dependent and flips.computation.flat == ("relu(float32[1, 4])",)


class Picks(nn.Module):
    """Runs value-dependent operations (``STEPS``) between two layers."""

    def __init__(self, step, scale=1.0, act=F.relu):
        super().__init__()
        self.fc, self.out = nn.Linear(4, 4), nn.Linear(4, 4)
        self.step, self.scale, self.act = step, scale, act

    def forward(self, x):
        y = self.act(self.fc(x)) * self.scale
        y = self.step(y, self)
        return self.out(y.reshape(-1, 4)[:2])


def _keep_positive(y, m):
    return y[y > 0]


STEPS = {
    "nonzero": lambda y, m: y[torch.nonzero(y[:, 0] > 0).flatten()],
    "argwhere": lambda y, m: y[torch.argwhere(y[:, 0] > 0)[:, 0]],
    "mask": lambda y, m: _keep_positive(y, m).reshape(-1, 1).expand(-1, 4),
    "masked_select": lambda y, m: torch.masked_select(y, y > 0).reshape(-1, 1).expand(-1, 4),
    "where": lambda y, m: y[torch.where(y[:, 0] > 0)[0]],
    "unique": lambda y, m: torch.unique((y * 2).round()).reshape(-1, 1).expand(-1, 4),
    "repeat_interleave": lambda y, m: y.repeat_interleave((y[:, 0] > 0).long() + 1, dim=0),
    "item": lambda y, m: y[: int(y.sum().item() > 0) + 1],
    "bool": lambda y, m: y.tanh() if y.sum() > 0 else y.sigmoid(),
    "tolist": lambda y, m: y[: len([v for v in y[:, 0].tolist() if v > 0]) + 1],
    "int": lambda y, m: y[: int(y[0, 0] > 0) + 1],
    "float": lambda y, m: y[: (float(y[0, 0]) > 0) + 1],
    "a parameter": lambda y, m: y.tanh() if m.out.weight.sum() > 0 else y.sigmoid(),
    "a random draw": lambda y, m: y.tanh() if torch.rand(1).item() > 0.5 else y.sigmoid(),
    "nms": lambda y, m: y[nms(torch.cat([y[:, :2], y[:, :2] + 1], 1), y[:, 2], 0.5)],
}


def nms(boxes, scores, threshold):
    from torchvision.ops import nms as torchvision_nms

    return torchvision_nms(boxes, scores, threshold)


@pytest.mark.parametrize("step", list(STEPS))
def test_operations_after_a_value_dependent_one_are_not_hashed_and_edits_before_it_are(step):
    model = Picks(STEPS[step])
    hashes = set()
    for seed in range(12):
        torch.manual_seed(seed)
        for tensor in model.parameters():
            nn.init.normal_(tensor)
        (w,) = recorded(partial(model, torch.randn(6, 4)))
        assert w.computation.partial, w.computation.flat
        assert w.computation.coverage().endswith(" follows the data")
        assert w.computation.ops > len(w.computation.flat)
        hashes.add(w.compute_hash)
    assert len(hashes) == 1
    for edit in ({"act": F.gelu}, {"scale": 2.0}):
        (edited,) = recorded(partial(Picks(STEPS[step], **edit), torch.randn(6, 4)))
        assert edited.compute_hash not in hashes


def test_values_computed_from_constants_alone_do_not_end_the_computation():
    def steps(y, m):
        n = int(torch.arange(4).sum().item())  # (6, whatever the data)
        return y[torch.nonzero(torch.arange(n) < 2).flatten()]

    (w,) = recorded(lambda: Picks(steps)(torch.rand(6, 4)))
    assert not w.computation.partial and w.computation.coverage() is None
    assert w.computation.ops == len(w.computation.flat)


#: A data tensor where torch reads values or an offset, never a size (``v``: one value of y).
VALUES_NOT_SIZES = {
    "linspace": lambda y, v: y + torch.linspace(v, v + 1, 4),
    "logspace": lambda y, v: y * torch.logspace(v.tanh(), 1.0, 4),
    "full": lambda y, v: y + torch.full((6, 4), v),
    "full, by keyword": lambda y, v: y + torch.full(size=(6, 4), fill_value=v),
    "new_full": lambda y, v: y + y.new_full((6, 4), v),
    "narrow": lambda y, v: y.narrow(0, (v > 0).long(), 4),
}


@pytest.mark.parametrize("step", list(VALUES_NOT_SIZES))
def test_a_data_tensor_that_sets_values_not_the_shape_does_not_end_the_computation(step):
    def steps(y, m):
        return VALUES_NOT_SIZES[step](y, y[0, 0].detach())

    hashes = set()
    for seed in range(4):
        torch.manual_seed(seed)
        (w,) = recorded(partial(Picks(steps), torch.randn(6, 4)))
        assert w.computation.coverage() is None, w.computation.flat
        assert w.computation.flat[-1].startswith("linear(")
        hashes.add(w.compute_hash)
    assert len(hashes) == 1


class Detects(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone, self.rpn, self.head = nn.Linear(4, 4), Call(_keep_positive), nn.Linear(1, 2)

    def forward(self, x):
        kept = self.rpn(self.backbone(x), None)
        return self.head(kept.reshape(-1, 1))


def test_an_event_in_a_submodule_ends_its_callers_list_and_a_later_call_keeps_its_own():
    model = Detects()
    rows = recorded(lambda: model(torch.randn(3, 4)), max_depth=1)
    root, backbone, rpn, head = rows
    assert [i.name for i in root.computation.items if isinstance(i, SubCall)] == [
        "backbone",
        "rpn",
    ]
    assert root.computation.flat[-1] == "getitem(float32[3, 4], bool[3, 4]) -> follows the data"
    assert root.computation.stop == "rpn"
    assert root.computation.coverage() == (
        f"covers 3 of {root.computation.ops} operations: op 3, getitem in rpn at "
        f"{_line_of(_keep_positive, 1)}, follows the data"
    )
    assert rpn.computation.partial and not backbone.computation.partial
    assert not head.computation.partial and head.computation.flat[0].startswith("linear(")
    (flat,) = recorded(lambda: model(torch.randn(3, 4)))
    assert flat.compute_hash == root.compute_hash


class Swaps(nn.Module):
    def __init__(self, swapped=False):
        super().__init__()
        self.fc1, self.fc2, self.swapped = nn.Linear(4, 4), nn.Linear(4, 4), swapped

    def forward(self, x):
        return self.fc1(self.fc2(x)) if self.swapped else self.fc2(self.fc1(x))


@pytest.mark.parametrize("max_depth", [0, 1])
def test_two_layers_of_one_shape_swapped_change_the_compute_hash(max_depth):
    x = torch.rand(2, 4)
    before = compute_hash(Swaps(), x, max_depth=max_depth)
    assert compute_hash(Swaps(swapped=True), x, max_depth=max_depth) != before
    assert compute_hash(Swaps(), x, max_depth=1 - max_depth) == before


class Shares(nn.Module):
    """Two blocks that use a weight of their caller's."""

    def __init__(self):
        super().__init__()
        self.shared = nn.Parameter(torch.rand(4, 4))
        self.blocks = nn.Sequential(Call(self.use), Call(self.use))

    def use(self, x):
        return x @ self.shared

    def forward(self, x):
        return self.blocks(x)


def test_tensors_are_named_from_the_call_they_are_in_at_any_depth():
    model, x = Shares(), torch.rand(2, 4)
    rows = recorded(lambda: model(x), max_depth=2)
    root, blocks, block = rows
    assert block.paths == ("blocks.0", "blocks.1")
    assert block.computation.flat == ("matmul(float32[2, 4], float32[4, 4]@^^shared)",)
    assert blocks.computation.flat == ("matmul(float32[2, 4], float32[4, 4]@^shared)",) * 2
    assert root.computation.flat == ("matmul(float32[2, 4], float32[4, 4]@shared)",) * 2
    assert compute_hash(model, x, max_depth=0) == root.compute_hash


class Slices(nn.Module):
    """Calls a child on a data-dependent number of rows: a new child workload late."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x[: int(x[0, 0].item()) + 1])


def test_a_new_submodule_workload_in_an_untraced_call_marks_its_callers():
    model = Slices()
    calls = [torch.zeros(4, 4), torch.zeros(4, 4), torch.ones(4, 4)]
    rows = recorded(lambda: [model(x) for x in calls], max_depth=1)
    root, *children = rows
    assert root.data_dependent
    late = next(w for w in children if w.compute_hash is None)
    assert late.compute_unknown is not None and "not traced" in late.compute_unknown


def test_compiled_and_scripted_modules_have_no_compute_hash_and_say_why():
    lin, x = nn.Linear(4, 4), torch.rand(2, 4)
    (compiled,) = recorded(lambda: torch.compile(lin, backend="eager")(x))
    assert compiled.compute_hash is None
    assert compiled.compute_unknown == "compiled with torch.compile: its operations are not visible"
    (scripted,) = recorded(lambda: torch.jit.script(lin)(x))
    assert scripted.compute_hash is None and "scripted" in str(scripted.compute_unknown)
    holder = nn.Sequential(nn.ReLU(), torch.jit.script(nn.Linear(4, 4)))
    (root,) = recorded(lambda: holder(x))
    assert root.compute_hash is None and root.compute_unknown is not None
    assert root.compute_unknown.startswith("contains 1, scripted with TorchScript")
    assert root.flops == 2 * 2 * 4 * 4  # (counted at the aten level there)


def aten_flops(fn, *args):
    with counting(nn.Module(), args) as count:
        fn(*args)
    return count.flops


class Call(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


R = torch.rand
FLOP_CASES = {
    "mm": (torch.mm, R(3, 4), R(4, 5)),
    "dot": (torch.matmul, R(4), R(4)),
    "mv": (torch.matmul, R(3, 4), R(4)),
    "vm": (torch.matmul, R(4), R(4, 5)),
    "3d@2d": (torch.matmul, R(2, 3, 4), R(4, 5)),
    "3d@1d": (torch.matmul, R(2, 3, 4), R(4)),
    "1d@3d": (torch.matmul, R(4), R(2, 4, 5)),
    "2d@3d": (torch.matmul, R(3, 4), R(2, 4, 5)),
    "strided 3d@1d": (torch.matmul, R(3, 2, 4).transpose(0, 1), R(4)),
    "broadcast": (torch.matmul, R(2, 1, 3, 4), R(5, 4, 6)),
    "operator": (lambda a, b: a @ b, R(2, 3, 4), R(2, 4, 5)),
    "bmm": (torch.bmm, R(2, 3, 4), R(2, 4, 5)),
    "addmm": (torch.addmm, R(5), R(3, 4), R(4, 5)),
    "baddbmm": (torch.baddbmm, R(2, 3, 5), R(2, 3, 4), R(2, 4, 5)),
    "linear 1d": (F.linear, R(4), R(5, 4), R(5)),
    "linear 3d": (F.linear, R(2, 3, 4), R(5, 4)),
    "einsum": (lambda a, b: torch.einsum("bij,bjk->bik", a, b), R(2, 3, 4), R(2, 4, 5)),
    "einsum outer": (lambda a, b: torch.einsum("i,j->ij", a, b), R(3), R(4)),
    "einsum ellipsis": (lambda a, b: torch.einsum("...ij,jk", a, b), R(2, 3, 4), R(4, 5)),
    "einsum ellipsis, unequal ranks": (
        lambda a, b: torch.einsum("...ij,...jk->...ik", a, b),
        R(2, 3, 4, 5),
        R(3, 5, 6),
    ),
    "einsum 3": (lambda a, b, c: torch.einsum("ij,jk,kl->il", a, b, c), R(2, 3), R(3, 4), R(4, 5)),
    "conv2d": (lambda x, w: F.conv2d(x, w, None, 2, 1, 1, 2), R(1, 4, 9, 9), R(6, 2, 3, 3)),
    "conv unbatched": (F.conv1d, R(4, 9), R(6, 4, 3)),
    "conv transposed": (F.conv_transpose2d, R(1, 4, 5, 5), R(4, 3, 3, 3)),
    "attention": (F.scaled_dot_product_attention, R(1, 2, 5, 8), R(1, 2, 7, 8), R(1, 2, 7, 4)),
    "lstm": (nn.LSTM(4, 6), R(3, 1, 4)),
    "bilinear": (F.bilinear, R(2, 3), R(2, 4), R(5, 3, 4)),
}


@pytest.mark.parametrize("case", list(FLOP_CASES))
def test_function_level_flops_equal_the_aten_level_count(case):
    fn, *args = FLOP_CASES[case]
    with torch.no_grad():
        assert count_flops(Call(fn), tuple(args), {}) == aten_flops(fn, *args)


def test_recording_imports_no_dynamo():
    code = (
        "import sys, torch\n"
        "from pytest_workload import WorkloadRecorder\n"
        "from tests.models import TinyNet\n"
        "r = WorkloadRecorder('t', max_depth=1)\n"
        "with r.recording(all_roots=True):\n"
        "    TinyNet()(torch.rand(1, 3, 8, 8))\n"
        "r.measure(None)\n"
        "w = r.workloads().workloads[0]\n"
        "assert w.flops and w.compute_hash, w\n"
        "print('torch._dynamo' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


SIDE = torch.zeros(4)


@pytest.mark.parametrize(
    "write",
    [
        lambda x: SIDE.add_(1),
        lambda x: SIDE[:2].mul_(2),
        lambda x: SIDE.__setitem__(0, 1.0),
        lambda x: F.relu(SIDE, inplace=True),
        lambda x: F.relu(SIDE, True),
        lambda x: torch.add(x, 1, out=SIDE),
    ],
    ids=["method", "view", "setitem", "inplace kwarg", "inplace positional", "out"],
)
def test_a_write_outside_the_module_is_seen(write):
    model, x = Call(lambda x: (write(x), x * 2)[1]), torch.rand(4)
    with tracing(model, (x,)) as trace:
        model(x)
    assert trace.foreign_write is not None and "wrote to a tensor outside" in trace.foreign_write


def test_writes_to_the_module_inputs_and_new_tensors_are_its_own():
    bn, x = nn.BatchNorm1d(4).train(), torch.rand(3, 4)
    model = Call(lambda x: F.relu(bn(x).add_(1) + x.mul_(1), inplace=True))
    model.bn = bn
    with tracing(model, (x,)) as trace:
        model(x)
    assert trace.foreign_write is None


def test_stored_computations_are_checked_against_their_keys():
    child = Computation(("relu(float32[2])",))
    root = Computation(("neg(float32[2])", SubCall("a", child)))
    table = {c.hash: c.stored_items() for c in (root, child)}
    assert read_computations(table)[root.hash] == root
    edited = {**table, child.hash: ["gelu(float32[2])"]}
    with pytest.raises(WorkloadDataError, match="does not hash to its key"):
        read_computations(edited)
    with pytest.raises(WorkloadDataError, match="missing"):
        read_computations({root.hash: table[root.hash]})


def test_the_diff_names_the_submodule_and_the_operation():
    before = Computation(("linear(float32[1, 8])", "relu(float32[1, 8])"))
    after = Computation(("linear(float32[1, 8])", "gelu(float32[1, 8])", "add(float32[1, 8])"))
    lines: list[str] = []
    diff_operations(
        Computation(("x(float32[1])", SubCall("blocks.0", before))),
        Computation(("x(float32[1])", SubCall("blocks.0", after))),
        "model",
        lines,
    )
    assert lines == ["blocks.0: relu -> gelu at op 2", "blocks.0: + add(float32[1, 8]) at op 3"]


def test_a_snapshot_keeps_each_distinct_computation_once():
    model = nn.Sequential(*[nn.Linear(4, 4) for _ in range(6)])
    rows = recorded(lambda: model(torch.rand(2, 4)), max_depth=1)
    doc = TestWorkloads("t", rows).folded()
    assert [e.patterns for e in doc] == [["model"], ["[0-5]"]]
    stored = doc.to_snapshot()["computations"]
    assert isinstance(stored, dict) and len(stored) == 2
    read = TestWorkloads.from_snapshot(load_json(snapshot_text(doc)))
    assert read.to_snapshot()["computations"] == stored
    assert [e.computation for e in read] == [e.computation for e in doc]


ACTIVATION = {"act": F.relu}


class Swappable(nn.Module):
    """One structure whatever its forward calls (a module global)."""

    def forward(self, x):
        return ACTIVATION["act"](x)


def test_reports_compared_by_compute_hash_say_the_computation_changed(monkeypatch):
    model, x, rows = Swappable(), torch.rand(2, 4), {}
    for act in (F.relu, F.gelu):
        monkeypatch.setitem(ACTIVATION, "act", act)
        rows[act] = recorded(lambda: model(x))
    # (through the JSON report: its rows keep the hash, not the operations)
    base, head = (
        TestWorkloads("t", tuple(Workload.from_dict(w.to_dict()) for w in found)).folded()
        for found in rows.values()
    )
    assert all(e.computation is None for e in (*base, *head))
    ((old, new),) = compare_tables(base, head)
    assert old is not None and new is not None
    line, costs = explain(old, new, base, head)
    assert line.startswith("computation changed (compute hash ")
    assert line.endswith("; the operations are not stored on both sides")
    assert costs == "operations +1 gelu, -1 relu"  # (the same bytes moved)


def test_a_failure_of_the_tracer_never_reaches_the_forward(monkeypatch):
    from pytest_workload._tracing import tracer as tracing_module

    real = tracing_module.call_text

    def failing(name, args, kwargs, refer):
        if name == "gelu":
            raise RuntimeError("unreadable")
        return real(name, args, kwargs, refer)

    monkeypatch.setattr(tracing_module, "call_text", failing)
    model, x = Act(act=F.gelu), torch.rand(2, 4)
    expected = model(x)
    recorder = WorkloadRecorder("t", timing=False)
    with recorder.recording(all_roots=True):
        out = model(x)
    assert torch.equal(out, expected) and not recorder.errors
    recorder.measure(None)
    (w,) = recorder.workloads()
    assert w.compute_hash is None
    assert w.compute_unknown == "its operations could not be traced (RuntimeError: unreadable)"


def test_sparse_inputs_are_traced():
    sparse = torch.eye(4).to_sparse()
    (w,) = recorded(lambda: Call(torch.sparse.mm)(sparse, torch.rand(4, 2)))
    assert w.computation is not None
    assert w.computation.flat == ("_sparse_mm(float32[4, 4, sparse_coo], float32[4, 2])",)


def test_multi_head_attention_is_traced_as_one_counted_operation():
    # its Python body sends every call made inside a function mode back to the mode
    attention = nn.MultiheadAttention(8, 2, batch_first=True)
    x = torch.rand(2, 3, 8)
    (root,) = recorded(lambda: attention(x, x, x, need_weights=False))
    assert root.compute_hash is not None, root.compute_unknown
    assert [op.split("(")[0] for op in root.computation.flat] == [
        "transpose",
        "multi_head_attention_forward",
        "transpose",
    ]
    projections = 2 * 6 * 8 * 24 + 2 * 6 * 8 * 8  # in_proj (q, k, v) and out_proj, 6 tokens
    scores_and_values = 2 * 2 * (2 * 2 * 3 * 3 * 4)  # two products, batch 2 x 2 heads, 3x3 x 4
    assert root.flops == projections + scores_and_values
