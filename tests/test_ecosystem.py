"""Built-in descriptions of the ecosystem's input types: torchvision's ImageList and Hugging
Face caches, looked up only when their library is already imported."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from pytest_workload import WorkloadRecorder
from pytest_workload._core.errors import UndescribableInputError
from pytest_workload._fingerprint.describe import describe_args
from pytest_workload._workload.signature import InputSignature

image_list = pytest.importorskip("torchvision.models.detection.image_list")
transformers = pytest.importorskip("transformers")


def test_an_image_list_is_its_batch_tensor_and_image_sizes():
    images = image_list.ImageList(torch.rand(2, 3, 32, 40), [(30, 40), (32, 36)])
    [node] = describe_args((images,))
    assert node == {
        "builtin": "torchvision.models.detection.image_list.ImageList",
        "fields": {
            "tensors": {"tensor": [2, 3, 32, 40], "dtype": "float32"},
            "image_sizes": [{"tuple": [30, 40]}, {"tuple": [32, 36]}],
        },
    }
    assert InputSignature((node,)).format() == (
        "(ImageList(tensors=float32[2, 3, 32, 40], image_sizes=[(30, 40), (32, 36)]))"
    )
    other = image_list.ImageList(torch.rand(2, 3, 32, 40), [(32, 40), (32, 36)])
    assert describe_args((other,)) != (node,)


def _gpt2():
    config = transformers.GPT2Config(
        n_layer=2,
        n_head=2,
        n_embd=16,
        vocab_size=50,
        n_positions=32,
        bos_token_id=0,
        eos_token_id=0,
    )
    torch.manual_seed(0)
    return transformers.GPT2LMHeadModel(config).eval()


def _cache(model, length):
    with torch.no_grad():
        return model(torch.randint(0, 50, (1, length)), use_cache=True).past_key_values


def test_a_dynamic_cache_is_its_layers_length_and_tensor_shapes():
    cache = _cache(_gpt2(), 5)
    [node] = describe_args((cache,))
    assert isinstance(node, dict) and node["builtin"] == "transformers.cache_utils.DynamicCache"
    value = node["fields"]
    assert (value["layers"], value["seq_length"]) == (2, 5)
    kv = {"tensor": [1, 2, 5, 8], "dtype": "float32"}
    assert value["tensors"] == [[kv, kv], [kv, kv]]


def test_decoding_with_a_cache_records_one_workload_per_cache_length():
    model = _gpt2()
    recorder = WorkloadRecorder("t.py::test", timing=False)
    with recorder.recording(all_roots=True), torch.no_grad():
        for length in (4, 4, 6):
            cache = _cache(model, length)
            model(torch.randint(0, 50, (1, 1)), cache=cache, use_cache=True)
    assert recorder.errors == ()
    decode = [w for w in recorder.workloads() if "DynamicCache" in w.input_signature.format()]
    assert [w.calls for w in decode] == [2, 1]
    assert decode[0].hash != decode[1].hash


def test_a_static_cache_not_yet_filled():
    config = _gpt2().config
    cache = transformers.StaticCache(config=config, max_cache_len=16)
    [node] = describe_args((cache,))
    assert isinstance(node, dict) and node["builtin"] == "transformers.cache_utils.StaticCache"
    assert node["fields"]["layers"] == 2
    assert node["fields"]["seq_length"] == 0


def test_the_describe_hook_is_asked_first():
    images = image_list.ImageList(torch.rand(1, 3, 8, 8), [(8, 8)])
    [node] = describe_args((images,), custom=lambda value: "mine")
    assert node == {"custom": "torchvision.models.detection.image_list.ImageList", "value": "mine"}


def test_nothing_is_imported_to_look_them_up():
    code = (
        "import sys\n"
        "from pytest_workload._fingerprint.describe import describe_args\n"
        "from pytest_workload._core.errors import UndescribableInputError\n"
        "from pytest_workload._perf.first_call import copy_inputs\n"
        "try:\n"
        "    describe_args((object(),))\n"
        "except UndescribableInputError:\n"
        "    pass\n"
        "assert copy_inputs(x for x in ())[1] == ('builtins.generator',)\n"
        "print(sorted(m for m in ('transformers', 'torchvision') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_other_objects_stay_undescribable():
    with pytest.raises(UndescribableInputError, match=r"args\[0\]"):
        describe_args((object(),))


def test_a_detection_model_records_its_region_proposals_input():
    from torchvision.models.detection import fasterrcnn_mobilenet_v3_large_320_fpn

    torch.manual_seed(0)
    model = fasterrcnn_mobilenet_v3_large_320_fpn(
        weights=None, weights_backbone=None, num_classes=3
    ).eval()
    recorder = WorkloadRecorder("t.py::test", max_depth=1, timing=False)
    with recorder.recording(all_roots=True), torch.no_grad():
        model([torch.rand(3, 64, 80)])
    assert recorder.errors == ()
    [rpn] = [w for w in recorder.workloads() if w.name == "rpn"]
    assert rpn.input_signature.format().startswith(
        "(ImageList(tensors=float32[1, 3, 320, 416], image_sizes=[(320, 400)]), {'0': "
    )
