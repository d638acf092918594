"""The recorder facade: what a test records, named where it was called, and its API."""

import gc
import weakref

import numpy as np
import pytest
import timm
import torch
import typing_extensions
from torch import nn

from pytest_workload import WorkloadRecorder
from tests.models import TinyNet
from tests.recording import no_hooks_left, record


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


def test_a_root_called_through_a_deprecation_wrapper_is_located_at_the_code_that_called_it():
    # (torch puts typing_extensions' @deprecated on some of its own functions)
    deprecated_call = typing_extensions.deprecated("old")(nn.Module.__call__)
    model, x = nn.Linear(2, 2), torch.rand(1, 2)
    with pytest.warns(DeprecationWarning, match="old"):
        (root,) = record(lambda: deprecated_call(model, x)).roots()
    path, line = root.location.rsplit(":", 1)
    assert path == __file__
    with open(path) as source:
        assert "deprecated_call(model, x)" in source.read().splitlines()[int(line) - 1]


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


def test_nested_call_is_not_a_new_root(tiny):
    table = record(lambda: tiny(torch.rand(1, 3, 8, 8)))
    assert [w.name for w in table] == ["tiny"]


def test_kwargs_and_scalars_are_part_of_the_workload(tiny):
    x = torch.rand(1, 3, 8, 8)
    table = record(lambda: [tiny(x, scale=1.0), tiny(x, scale=2.0), tiny(x, 2.0)])
    assert [w.input_signature.format() for w in table] == [
        "(float32[1, 3, 8, 8], scale=1.0)",
        "(float32[1, 3, 8, 8], scale=2.0)",
        "(float32[1, 3, 8, 8], 2.0)",
    ]


def test_tracking_records_only_tracked_modules(tiny):
    other = nn.Linear(2, 2)
    recorder = WorkloadRecorder("t")
    with recorder.recording(all_roots=False):
        recorder.track(tiny, max_depth=1)
        tiny(torch.rand(1, 3, 8, 8))
        other(torch.rand(1, 2))
    assert {w.name for w in recorder.workloads()} == {"tiny", "stem", "blocks", "head"}
    assert no_hooks_left(tiny, other)


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


def test_two_tracked_models_are_both_recorded(tiny):
    other = nn.Linear(2, 2)
    recorder = WorkloadRecorder("t")
    with recorder.recording(all_roots=False):
        recorder.track(tiny)
        recorder.track(other)
        tiny(torch.rand(1, 3, 8, 8))
        other(torch.rand(1, 2))
    assert [w.name for w in recorder] == ["tiny", "other"]


def test_tracking_refuses_what_is_not_a_module():
    with pytest.raises(TypeError, match=r"track\(\) takes a torch\.nn\.Module, got str"):
        WorkloadRecorder("t").track("model")


def test_measuring_refuses_while_recording(tiny):
    recorder = WorkloadRecorder("t")
    recorder.track(tiny)
    with pytest.raises(RuntimeError, match="recording must have ended"):
        recorder.measure(None)
    recorder.stop()


def test_an_attribute_that_cannot_be_compared_reads_the_tree_again():
    class Holds(nn.Linear):
        def forward(self, x):
            self.mask = np.ones(2)  # (equal arrays: their == is an array, which no if can read)
            return super().forward(x)

    model = Holds(2, 2)
    table = record(lambda: [model(torch.rand(1, 2)) for _ in range(8)])
    assert [w.calls for w in table.roots()] == [8]


def test_ended_recorder_refuses_new_tracking(tiny):
    recorder = WorkloadRecorder("t")
    recorder.stop()
    with pytest.raises(RuntimeError, match="has ended"):
        recorder.track(tiny)


@pytest.mark.parametrize("bad", [-1, "2", True, 1.5])
def test_bad_max_depth_is_rejected(bad):
    with pytest.raises(ValueError, match="max_depth must be an int >= 0"):
        WorkloadRecorder("t", max_depth=bad)


class Owner(nn.Module):
    """Children called at top level through methods other than ``forward``."""

    def __init__(self) -> None:
        super().__init__()
        self.layer1 = nn.Sequential(nn.Linear(4, 4))
        self.layer2 = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
        self.head = nn.Linear(4, 2)

    def forward_features(self, x):
        return self.layer2(self.layer1(x))

    def forward_head(self, x):
        return self.head(x)


def test_children_called_by_a_method_of_their_owner_are_named_by_their_path():
    model = Owner().eval()
    x = torch.rand(1, 4)
    table = record(lambda: model.forward_head(model.forward_features(x)))
    assert [w.name for w in table.roots()] == ["model.layer1", "model.layer2", "model.head"]


def test_an_owner_no_frame_names_is_named_by_its_class():
    x = torch.rand(1, 4)
    table = record(lambda: Owner().eval().forward_features(x))
    assert [w.name for w in table.roots()] == ["Owner.layer1", "Owner.layer2"]


def test_a_child_the_caller_names_keeps_that_name():
    model = Owner().eval()
    features = model.layer1
    table = record(lambda: features(torch.rand(1, 4)))
    assert [w.name for w in table.roots()] == ["features"]


def test_a_module_its_caller_neither_owns_nor_names_is_named_by_its_class():
    class Runner(nn.Module):
        def run(self, models, x):
            return models[0](x)

    x = torch.rand(1, 4)
    table = record(lambda: Runner().run([nn.Linear(4, 2)], x))
    assert [w.name for w in table.roots()] == ["Linear"]


def _recorded_model() -> weakref.ref[nn.Module]:
    model = TinyNet().eval()
    recorder = WorkloadRecorder("t")
    with recorder.recording(all_roots=True):
        model(torch.rand(1, 3, 8, 8))
    return weakref.ref(model)


def test_an_ended_recording_leaves_no_cycle_that_keeps_its_model():
    """Freed by reference counting alone: a cycle would keep each test's model alive until a
    full collection, which costs a suite of fresh models a pass over the whole heap."""
    gc.disable()
    try:
        assert _recorded_model()() is None
    finally:
        gc.enable()
