import threading
import warnings
from collections import OrderedDict

import pytest
import timm
import torch
from torch import nn
from torch.nn.modules import module as torch_module

from pytest_workload import FingerprintScheme, InputSignature, WorkloadRecorder
from pytest_workload._identity.fingerprint import CURRENT_SCHEME
from pytest_workload._identity.structure import structure_node
from tests.models import TinyNet, twins


def no_hooks_left(*modules: nn.Module) -> bool:
    globals_empty = not (
        torch_module._global_forward_pre_hooks or torch_module._global_forward_hooks
    )
    return globals_empty and all(
        not m._forward_pre_hooks and not m._forward_hooks for top in modules for m in top.modules()
    )


def record(fn, *, max_depth=0, timing=True, scheme=CURRENT_SCHEME):
    recorder = WorkloadRecorder("t", max_depth=max_depth, timing=timing, scheme=scheme)
    with recorder.recording(all_roots=True):
        fn()
    assert recorder.errors == ()
    return recorder.workloads()


@pytest.fixture(scope="module")
def mobilenet():
    return timm.create_model("mobilenetv2_035", pretrained=False).eval()


def test_seed_case_two_shapes_two_workloads(mobilenet):
    small, big = torch.rand(1, 3, 28, 28), torch.rand(1, 3, 224, 224)
    table = record(lambda: [mobilenet(small), mobilenet(big), mobilenet(small)])
    roots = table.roots()
    assert [r.calls for r in roots] == [2, 1]
    assert [r.input_signature.format() for r in roots] == [
        "(float32[1, 3, 28, 28])",
        "(float32[1, 3, 224, 224])",
    ]
    assert roots[0].hash != roots[1].hash
    assert roots[0].structure_hash == roots[1].structure_hash
    assert roots[0].name == "mobilenet"
    assert roots[0].class_name == "timm.models.efficientnet.EfficientNet"
    assert roots[0].params.count == 1_677_128
    path, line = roots[0].location.rsplit(":", 1)
    assert path == __file__
    with open(path) as source:
        assert "mobilenet(small)" in source.read().splitlines()[int(line) - 1]


def test_seed_case_depth_one_blocks_get_two_hashes(mobilenet):
    small, big = torch.rand(1, 3, 28, 28), torch.rand(1, 3, 224, 224)
    table = record(lambda: [mobilenet(small), mobilenet(big)], max_depth=1)
    blocks = [w for w in table if w.name == "blocks"]
    assert [b.input_signature.format() for b in blocks] == [
        "(float32[1, 16, 14, 14])",
        "(float32[1, 16, 112, 112])",
    ]
    assert blocks[0].hash != blocks[1].hash
    assert {b.parent for b in blocks} == {r.hash for r in table.roots()}
    assert all(w.depth == 1 for w in table if w.parent is not None)
    # the classifier sees the same input at both sizes: one hash, under each caller
    classifiers = [w for w in table if w.name == "classifier"]
    assert len({c.hash for c in classifiers}) == 1 and len(classifiers) == 2


def test_max_depth_two_reaches_grandchildren(tiny):
    table = record(lambda: tiny(torch.rand(1, 3, 8, 8)), max_depth=2)
    assert {(w.name, w.depth) for w in table} == {
        ("tiny", 0),
        ("stem", 1),
        ("blocks", 1),
        ("head", 1),
        ("blocks.0", 2),
        ("blocks.1", 2),
        ("blocks.2", 2),
    }


def test_same_block_in_two_models_has_one_hash():
    torch.manual_seed(0)
    block = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    model_a = nn.Sequential(nn.Identity(), block)
    model_b = nn.Sequential(nn.Linear(4, 4), nn.Sequential(nn.Linear(4, 4), nn.ReLU()))
    x = torch.rand(2, 4)
    table = record(lambda: [model_a(x), model_b(x)], max_depth=1)
    hashes = {w.name: [] for w in table}
    for w in table:
        hashes[w.name].append(w.hash)
    assert len(set(hashes["1"])) == 1 and len(hashes["1"]) == 2


def test_nested_call_is_not_a_new_root(tiny):
    table = record(lambda: tiny(torch.rand(1, 3, 8, 8)))
    assert [w.name for w in table] == ["tiny"]


def test_recording_changes_no_output_gradient_or_mode(tiny):
    x = torch.rand(2, 3, 8, 8)
    tiny.train()
    torch.manual_seed(0)
    plain = TinyNet().train()
    plain.load_state_dict(tiny.state_dict())
    expected = plain(x, scale=2.0)
    expected.sum().backward()
    recorder = WorkloadRecorder("t", max_depth=2)
    with recorder.recording(all_roots=True):
        out = tiny(x, scale=2.0)
        out.sum().backward()
    assert torch.equal(out, expected)
    for (name, p), q in zip(tiny.named_parameters(), plain.parameters(), strict=True):
        assert torch.equal(p.grad, q.grad), name
    assert all(m.training for m in tiny.modules())
    assert no_hooks_left(tiny)


def test_hooks_removed_when_the_model_raises(tiny):
    class Boom(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = nn.Linear(2, 2)

        def forward(self, x):
            self.inner(x)
            raise ValueError("boom")

    boom = Boom()
    recorder = WorkloadRecorder("t", max_depth=1)
    with pytest.raises(ValueError, match=r"^boom$"), recorder.recording(all_roots=True):
        boom(torch.rand(1, 2))
    assert no_hooks_left(boom)
    assert len(recorder) == 0


def test_a_raising_call_is_not_recorded_and_recording_goes_on():
    boom = nn.Linear(2, 2)
    ok = nn.Linear(3, 3)
    recorder = WorkloadRecorder("t", max_depth=1)
    with recorder.recording(all_roots=True):
        with pytest.raises(RuntimeError):
            boom(torch.rand(1, 5))
        ok(torch.rand(1, 3))
    assert [w.input_signature.format() for w in recorder.workloads()] == ["(float32[1, 3])"]


def test_hooks_removed_on_keyboard_interrupt(tiny):
    class Interrupt(nn.Module):
        def forward(self, x):
            raise KeyboardInterrupt

    model = Interrupt()
    recorder = WorkloadRecorder("t")
    with pytest.raises(KeyboardInterrupt), recorder.recording(all_roots=True):
        model(torch.rand(1))
    assert no_hooks_left(model)


def test_kwargs_and_scalars_are_part_of_the_workload(tiny):
    x = torch.rand(1, 3, 8, 8)
    table = record(lambda: [tiny(x, scale=1.0), tiny(x, scale=2.0), tiny(x, 2.0)])
    assert [w.input_signature.format() for w in table] == [
        "(float32[1, 3, 8, 8], scale=1.0)",
        "(float32[1, 3, 8, 8], scale=2.0)",
        "(float32[1, 3, 8, 8], 2.0)",
    ]


def test_shared_submodules_and_module_lists():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])
            self.shared = nn.Linear(4, 4)

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return self.shared(self.shared(x))

    table = record(lambda: Net()(torch.rand(2, 4)), max_depth=1)
    rows = [(w.name, w.depth, w.calls) for w in table]
    assert rows == [("Net", 0, 1), ("layers.0", 1, 1), ("layers.1", 1, 1), ("shared", 1, 2)]
    assert len({w.hash for w in table if w.depth == 1}) == 1


def test_module_called_several_times_dedupes(tiny):
    x = torch.rand(1, 3, 8, 8)
    table = record(lambda: [tiny(x) for _ in range(5)], max_depth=1)
    assert {w.calls for w in table} == {5}


def test_compiled_module_records_the_original(tiny):
    compiled = torch.compile(tiny, backend="eager")
    x = torch.rand(1, 3, 8, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the recorder must not trigger torch's hook warning
        table = record(lambda: [compiled(x), tiny(x)])
    assert len(table) == 1
    assert table.roots()[0].calls == 2
    assert table.roots()[0].class_name == "tests.models.TinyNet"


def test_data_parallel_records_the_wrapped_module(tiny):
    wrapped = nn.DataParallel(tiny)
    x = torch.rand(1, 3, 8, 8)
    table = record(lambda: [wrapped(x), tiny(x)], max_depth=1)
    roots = table.roots()
    assert len(roots) == 1 and roots[0].calls == 2
    assert {w.name for w in table.children(roots[0])} == {"stem", "blocks", "head"}


def test_scripted_module_records_the_top_level():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scripted = torch.jit.script(nn.Sequential(nn.Linear(4, 4), nn.ReLU()))
    table = record(lambda: scripted(torch.rand(2, 4)), max_depth=1)
    assert [(w.depth, w.class_name) for w in table] == [(0, "Sequential (scripted)")]
    assert no_hooks_left(scripted)


def test_tracking_records_only_tracked_modules(tiny):
    other = nn.Linear(2, 2)
    recorder = WorkloadRecorder("t")
    with recorder.recording(all_roots=False):
        recorder.track(tiny, max_depth=1)
        tiny(torch.rand(1, 3, 8, 8))
        other(torch.rand(1, 2))
    assert {w.name for w in recorder.workloads()} == {"tiny", "stem", "blocks", "head"}
    assert no_hooks_left(tiny, other)


def test_recursion_through_the_same_module():
    class Recursive(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2)

        def forward(self, x, n=2):
            x = self.lin(x)
            return self(x, n - 1) if n > 0 else x

    table = record(lambda: Recursive()(torch.rand(1, 2)), max_depth=1)
    assert [(w.depth, w.input_signature.format()) for w in table.roots()] == [
        (0, "(float32[1, 2])")
    ]
    inner = [w for w in table if w.name == "Recursive" and w.depth == 1]
    assert [w.input_signature.format() for w in inner] == ["(float32[1, 2], 1)"]


def test_calls_from_other_threads_are_not_recorded(tiny):
    x = torch.rand(1, 3, 8, 8)

    def calls():
        thread = threading.Thread(target=lambda: tiny(x))
        thread.start()
        thread.join()
        tiny(x, 3.0)

    table = record(calls)
    assert [w.input_signature.format() for w in table] == ["(float32[1, 3, 8, 8], 3.0)"]


def test_undescribable_input_is_reported_not_raised():
    class Opaque:
        pass

    class Takes(nn.Module):
        def forward(self, x, extra):
            return x

    model = Takes()
    recorder = WorkloadRecorder("t")
    with recorder.recording(all_roots=True):
        assert model(torch.ones(1), Opaque()).item() == 1.0
    assert len(recorder) == 0
    (error,) = recorder.errors
    assert "model (" in error and r"args[1] of type" in error and "Opaque" in error


def test_timing_off_records_no_time(tiny):
    table = record(lambda: tiny(torch.rand(1, 3, 8, 8)), timing=False)
    assert table.roots()[0].total_time_s is None


def test_ended_recorder_refuses_new_tracking(tiny):
    recorder = WorkloadRecorder("t")
    recorder.stop()
    with pytest.raises(RuntimeError, match="has ended"):
        recorder.track(tiny)


@pytest.mark.parametrize("bad", [-1, "2", True, 1.5])
def test_bad_max_depth_is_rejected(bad):
    with pytest.raises(ValueError, match="max_depth must be an int >= 0"):
        WorkloadRecorder("t", max_depth=bad)


def test_a_dtype_change_between_calls_is_a_new_structure():
    torch.manual_seed(0)
    alone = nn.Sequential(nn.Linear(4, 4), nn.ReLU()).eval().to(torch.bfloat16)
    expected = record(lambda: alone(torch.rand(1, 4, dtype=torch.bfloat16))).roots()[0]
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU()).eval()

    def calls():
        model(torch.rand(1, 4))
        model.to(torch.bfloat16)
        model(torch.rand(1, 4, dtype=torch.bfloat16))

    fp32, bf16 = record(calls).roots()
    assert bf16.hash == expected.hash
    assert bf16.structure_hash != fp32.structure_hash


def test_a_dtype_change_with_the_same_inputs_is_seen():
    embed = nn.Embedding(10, 4)
    ids = torch.tensor([[1, 2, 3]])

    def calls():
        embed(ids)
        embed.half()
        embed(ids)

    assert len({w.structure_hash for w in record(calls).roots()}) == 2


def test_a_parameter_replaced_with_another_dtype_is_seen():
    embed = nn.Embedding(10, 4)
    ids = torch.tensor([[1, 2, 3]])

    def calls():
        embed(ids)
        embed.weight = nn.Parameter(embed.weight.detach().double())
        embed(ids)

    assert len({w.structure_hash for w in record(calls).roots()}) == 2


def test_a_submodule_replaced_between_calls_is_seen():
    model = nn.Sequential(OrderedDict(body=nn.Linear(4, 4), head=nn.Linear(4, 2))).eval()
    x = torch.rand(1, 4)

    def calls():
        model(x)
        model.head = nn.Linear(4, 3)
        model(x)

    table = record(calls, max_depth=1)
    first, second = table.roots()
    assert first.structure_hash != second.structure_hash
    heads = [w for w in table if w.name == "head"]
    assert [w.class_name for w in heads] == ["torch.nn.modules.linear.Linear"] * 2
    assert heads[0].structure_hash != heads[1].structure_hash
    assert [table.workloads[h.caller] for h in heads] == [first, second]


def test_registration_hooks_are_gone_after_recording():
    from torch.nn.modules import module as torch_module

    before = len(torch_module._global_module_registration_hooks)
    record(lambda: nn.Linear(2, 2)(torch.rand(1, 2)))
    assert len(torch_module._global_module_registration_hooks) == before


def test_children_of_identical_siblings_stay_under_their_own_caller():
    table = record(lambda: twins()(torch.rand(2, 4)), max_depth=2)
    (root,) = table.roots()
    a, b = table.children(root)
    assert a.hash == b.hash
    assert [w.name for w in table.children(a)] == ["a.0", "a.1"]
    assert [w.name for w in table.children(b)] == ["b.0", "b.1"]
    rows = table.workloads
    assert [(w.name, None if w.caller is None else rows[w.caller].name) for w in rows] == [
        ("Sequential", None),
        ("a", "Sequential"),
        ("a.0", "a"),
        ("a.1", "a"),
        ("b", "Sequential"),
        ("b.0", "b"),
        ("b.1", "b"),
    ]
    assert {w.parent for w in rows if w.depth == 2} == {a.hash}  # the pinned field is a hash


class KwargBlindScheme(FingerprintScheme):
    """A scheme whose hashes collapse: keyword arguments never reach them."""

    def workload_hash(self, structure, signature):
        return super().workload_hash(structure, InputSignature(signature.args))


def test_callers_that_share_a_hash_do_not_share_children(tiny):
    scheme = KwargBlindScheme(1, structure_node)
    x = torch.rand(1, 3, 8, 8)
    table = record(lambda: [tiny(x, scale=1.0), tiny(x, scale=2.0)], max_depth=1, scheme=scheme)
    first, second = table.roots()
    assert first.hash == second.hash
    for root in (first, second):
        assert [(w.name, w.calls) for w in table.children(root)] == [
            ("stem", 1),
            ("blocks", 1),
            ("head", 1),
        ]


def test_submodules_off_the_cpu_report_no_timing():
    with torch.device("meta"):
        model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    table = record(lambda: model(torch.rand(2, 4, device="meta")), max_depth=1)
    assert [(w.name, w.timing, w.total_time_s) for w in table] == [
        ("model", None, None),
        ("0", None, None),
        ("1", None, None),
    ]


def test_a_module_moved_off_the_cpu_between_calls_reports_no_timing():
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    on_cpu = record(lambda: model(torch.rand(2, 4)), max_depth=1)
    assert [w.timing.device for w in on_cpu if w.depth == 1] == ["cpu", "cpu"]

    def calls():
        model(torch.rand(2, 4))
        model.to("meta")(torch.rand(2, 4, device="meta"))

    moved = record(calls, max_depth=1)
    assert [(w.calls, w.timing) for w in moved if w.depth == 1] == [(2, None), (2, None)]
