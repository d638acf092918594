import dataclasses
import enum
import os
import subprocess
import sys
from collections import namedtuple

import numpy as np
import pytest
import torch
from torch import nn

from pytest_workload._core.errors import UndescribableInputError, WorkloadDataError
from pytest_workload._fingerprint.describe import describe_args, describe_kwargs
from pytest_workload._workload.signature import (
    SHAPED_TAGS,
    TAGS,
    InputSignature,
    check_node,
    diff_node,
    format_node,
    tag_of,
)


def sig(*args, **kwargs):
    return InputSignature(describe_args(args), describe_kwargs(kwargs))


Point = namedtuple("Point", "x y")


@dataclasses.dataclass
class Batch:
    images: torch.Tensor
    train: bool


class Mode(enum.Enum):
    FAST = 1
    SLOW = 2


def test_tensor_is_shape_and_dtype_not_values():
    assert sig(torch.zeros(2, 3)) == sig(torch.ones(2, 3))
    assert sig(torch.zeros(2, 3)) != sig(torch.zeros(3, 2))
    assert sig(torch.zeros(2, 3)) != sig(torch.zeros(2, 3, dtype=torch.float16))
    assert describe_args([torch.zeros(1, 3)]) == ({"tensor": [1, 3], "dtype": "float32"},)


def test_device_is_metadata_not_identity():
    assert sig(torch.zeros(2, 3)) == sig(torch.zeros(2, 3, device="meta"))
    assert sig(device=torch.device("cpu")) == sig(device=torch.device("meta"))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cpu_and_cuda_share_a_signature():
    assert sig(torch.zeros(2, 3)) == sig(torch.zeros(2, 3, device="cuda"))


def test_scalars_by_value_and_type():
    assert sig(use_cache=True) != sig(use_cache=False)
    assert sig(1) != sig(True)
    assert sig(1) != sig(1.0)
    assert sig("a") != sig("b")
    assert sig(None) != sig(0)
    assert sig(float("nan")) == sig(float("nan"))


def test_containers_keep_type_and_boundaries():
    assert sig([1, 2]) != sig((1, 2))
    assert sig([[1, 1], [3, 4]]) != sig([[1, 1, 3], [4]])
    assert sig({"a": 1, "b": 2}) != sig({"a": 2, "b": 1})
    assert sig(Point(1, 2)) != sig((1, 2))
    assert sig(Batch(torch.zeros(1, 3), True)) != sig(Batch(torch.zeros(1, 3), False))
    assert sig(Mode.FAST) != sig(Mode.SLOW)


def test_keyword_order_does_not_matter():
    assert sig(a=1, b=2) == sig(b=2, a=1)


def test_dict_insertion_order_does_not_matter():
    assert sig({"a": 1, "b": 2}) == sig({"b": 2, "a": 1})
    assert sig({2: "x", "2": "y", True: 0}) == sig({True: 0, "2": "y", 2: "x"})
    # sorted by the keys' canonical JSON, so 1, 1.0 and True stay three keys
    (node,) = describe_args([{"b": 1, 1.5: 2, "a": 3}])
    assert [k for k, _ in node["dict"]] == ["a", "b", 1.5]


_BATCH_FROM_A_SET = (
    "import torch; from pytest_workload._fingerprint.describe import describe_args;"
    "from pytest_workload._core.strict_json import canonical_json;"
    "batch = {k: torch.zeros(1) for k in {'images', 'labels', 'masks', 'boxes', 'ids'}};"
    "print(canonical_json(describe_args([batch])))"
)


def test_a_dict_built_from_a_set_is_described_alike_under_every_hash_seed():
    outputs = {
        subprocess.run(
            [sys.executable, "-c", _BATCH_FROM_A_SET],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2", "3", "4")
    }
    assert len(outputs) == 1


def test_torch_size_is_not_a_tuple():
    assert sig(torch.Size([2, 3])) != sig((2, 3))
    assert describe_args([torch.Size([2, 3])]) == ({"size": [2, 3]},)
    assert format_node({"size": [2, 3]}) == "torch.Size([2, 3])"


@pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor, torch.quantize_per_channel")
def test_quantized_tensors_name_their_scheme_and_axis():
    x = torch.rand(2, 3)
    per_tensor = torch.quantize_per_tensor(x, 0.1, 0, torch.quint8)
    scales, zeros = torch.ones(3) * 0.1, torch.zeros(3, dtype=torch.long)
    per_channel = torch.quantize_per_channel(x, scales, zeros, 1, torch.quint8)
    along_rows = torch.quantize_per_channel(x, scales[:2], zeros[:2], 0, torch.quint8)
    assert len({sig(per_tensor), sig(per_channel), sig(along_rows)}) == 3
    (node,) = describe_args([per_channel])
    assert node["qscheme"] == "per_channel_affine" and node["axis"] == 1
    assert format_node(node) == "quint8[2, 3] per_channel_affine(axis=1)"
    assert InputSignature.from_dict(sig(per_channel).to_dict()) == sig(per_channel)


class Tagged(torch.Tensor):
    pass


def test_a_tensor_subclass_is_not_a_plain_tensor():
    plain = torch.zeros(2)
    assert sig(plain.as_subclass(Tagged)) != sig(plain)
    assert sig(nn.Parameter(plain)) == sig(plain)  # a parameter passed as input is a tensor
    (node,) = describe_args([plain.as_subclass(Tagged)])
    assert node["subclass"] == f"{__name__}.Tagged"
    assert format_node(node) == "float32[2] Tagged"


def test_numpy_arrays_and_scalars():
    assert sig(np.zeros((2, 3))) == sig(np.ones((2, 3)))
    assert sig(np.zeros((2, 3))) != sig(np.zeros((2, 3), dtype=np.float32))
    assert sig(np.zeros((2, 3))) != sig(torch.zeros(2, 3, dtype=torch.float64))
    assert sig(np.float32(1.0)) != sig(1.0)


@pytest.mark.parametrize(
    ("scalar", "dtype", "value"),
    [
        (np.float64(1.5), "float64", 1.5),
        (np.float32(1.5), "float32", 1.5),
        (np.int64(3), "int64", 3),
        (np.bool_(True), "bool", True),
        (np.str_("a"), "<U1", "a"),
    ],
)
def test_every_numpy_scalar_keeps_its_dtype(scalar, dtype, value):
    assert describe_args([scalar]) == ({"numpy": dtype, "value": value},)
    assert sig(scalar) != sig(value)


def test_undescribable_object_names_its_path():
    class Opaque:
        pass

    with pytest.raises(UndescribableInputError, match=r"args\[0\]\[1\]\['k'\] of type .*Opaque"):
        describe_args([[1, {"k": Opaque()}]])
    with pytest.raises(
        UndescribableInputError, match=r"kwargs\['gen'\] of type builtins.generator"
    ):
        describe_kwargs({"gen": (i for i in range(3))})


def test_a_dataclass_class_is_undescribable_like_any_class():
    with pytest.raises(UndescribableInputError, match=r"kwargs\['batch'\] of type builtins.type"):
        describe_kwargs({"batch": Batch})


def test_recursive_container_is_an_error():
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(UndescribableInputError, match="contains itself"):
        describe_args([loop])


def test_custom_describer_is_used_and_tagged_with_the_type():
    class Tokenizer:
        def __init__(self, vocab):
            self.vocab = vocab

    def describe(value):
        return {"vocab": value.vocab} if isinstance(value, Tokenizer) else None

    a = describe_args([Tokenizer(100)], describe)
    assert a == ({"custom": f"{__name__}.{Tokenizer.__qualname__}", "value": {"vocab": 100}},)
    assert a != describe_args([Tokenizer(200)], describe)


def test_signature_round_trips_through_dict():
    s = sig(torch.zeros(1, 3), Point(1, [2.5]), mask=None, mode=Mode.FAST)
    assert InputSignature.from_dict(s.to_dict()) == s


def test_readable_format():
    s = sig(torch.zeros(1, 3, 28, 28), (1,), use_cache=True)
    assert s.format() == "(float32[1, 3, 28, 28], (1,), use_cache=True)"
    assert format_node(describe_args([Point(1, 2)])[0]) == "Point(x=1, y=2)"


class Opaque:
    pass


@pytest.mark.parametrize(
    ("answer", "returned"), [({1, 2}, "builtins.set"), ({"x": Opaque()}, "builtins.dict")]
)
def test_a_describer_answer_that_is_not_json_is_undescribable(answer, returned):
    message = (
        rf"input args\[0\]\[1\] of type {__name__}.Opaque: pytest_workload_describe returned "
        rf"{returned}, which is not JSON"
    )
    with pytest.raises(UndescribableInputError, match=message):
        describe_args([[1, Opaque()]], lambda value: answer)


def test_a_failing_describer_is_named():
    def describe(value):
        raise KeyError("vocab")

    message = r"input args\[0\] of type .*Opaque: pytest_workload_describe failed: KeyError"
    with pytest.raises(UndescribableInputError, match=message):
        describe_args([Opaque()], describe)


#: One described value per tag, its readable form, and a change to it with its lines.
TAG_EXAMPLES = {
    "tensor": ({"tensor": [1, 3], "dtype": "float32"}, "float32[1, 3]"),
    "ndarray": ({"ndarray": [2], "dtype": "int64"}, "ndarray int64[2]"),
    "tuple": ({"tuple": [1, "a"]}, "(1, 'a')"),
    "dict": ({"dict": [["k", 2]]}, "{'k': 2}"),
    "namedtuple": ({"namedtuple": "m.Point", "fields": {"x": 1}}, "Point(x=1)"),
    "dataclass": ({"dataclass": "m.Box", "fields": {"w": 2.5}}, "Box(w=2.5)"),
    "builtin": ({"builtin": "tv.ImageList", "fields": {"n": 1}}, "ImageList(n=1)"),
    "enum": ({"enum": "m.Mode.FAST"}, "Mode.FAST"),
    "dtype": ({"dtype": "float16"}, "torch.float16"),
    "size": ({"size": [2, 3]}, "torch.Size([2, 3])"),
    "device": ({"device": "any"}, "<device>"),
    "float": ({"float": "nan"}, "nan"),
    "numpy": ({"numpy": "float32", "value": 1.5}, "np.float32(1.5)"),
    "complex": ({"complex": [1.0, 2.0]}, "complex[1.0, 2.0]"),
    "custom": ({"custom": "m.Tok", "value": {"n": [1]}}, "Tok<{'n': [1]}>"),
    "str_sha256": (
        {"str_sha256": "ab" * 32, "length": 2000, "preview": "xy"},
        "'xy'… (2000 characters, sha256 abababab)",
    ),
}


def test_every_input_tag_is_one_table_entry_that_checks_formats_and_diffs():
    assert set(TAG_EXAMPLES) == {tag.name for tag in TAGS}
    for name, (node, text) in TAG_EXAMPLES.items():
        tag = tag_of(node)
        assert tag is not None and tag.name == name
        check_node(node, "args[0]")
        assert format_node(node) == text
        assert diff_node("args[0]", node, node) == []
        with pytest.raises(WorkloadDataError, match=r"^args\[0\]: "):
            check_node({**node, "extra": 1}, "args[0]")


def test_a_change_is_worded_by_its_tag():
    tensor, _ = TAG_EXAMPLES["tensor"]
    point, _ = TAG_EXAMPLES["namedtuple"]
    assert diff_node("args[0]", tensor, {**tensor, "tensor": [2, 3]}) == [
        "input args[0]: shape [1, 3] -> [2, 3]"
    ]
    assert diff_node("args[0]", point, {**point, "fields": {"x": 2}}) == ["input args[0].x: 1 -> 2"]
    assert diff_node("args[0]", {"tuple": [1, 2]}, {"tuple": [1, 3]}) == [
        "input args[0][1]: 2 -> 3"
    ]
    assert diff_node("args[0]", {"dtype": "float16"}, {"dtype": "float32"}) == [
        "input args[0]: torch.float16 -> torch.float32"
    ]
    assert SHAPED_TAGS == ("tensor", "ndarray")
