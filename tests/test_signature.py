import dataclasses
import enum
from collections import namedtuple

import numpy as np
import pytest
import torch

from pytest_workload import InputSignature, UndescribableInputError
from pytest_workload._identity.describe import describe_args, describe_kwargs
from pytest_workload._model.signature import format_node


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
    assert sig({"a": 1, "b": 2}) != sig({"b": 2, "a": 1})  # dict order is kept
    assert sig(Point(1, 2)) != sig((1, 2))
    assert sig(Batch(torch.zeros(1, 3), True)) != sig(Batch(torch.zeros(1, 3), False))
    assert sig(Mode.FAST) != sig(Mode.SLOW)


def test_keyword_order_does_not_matter():
    assert sig(a=1, b=2) == sig(b=2, a=1)


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
