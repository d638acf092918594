"""The process-local key of a call's inputs: equal keys only for equal descriptions."""

import pytest
import torch
from torch import nn

from pytest_workload._fingerprint.describe import describe_args, describe_kwargs, inputs_key


def _described(args, kwargs):
    return describe_args(args), describe_kwargs(kwargs)


CALLS = [
    ((torch.rand(1, 2),), {}),
    ((torch.rand(1, 2, dtype=torch.float64),), {}),
    ((torch.rand(2, 1),), {}),
    ((torch.rand(1, 2).to_sparse(),), {}),
    ((torch.rand(1, 2), 1), {}),
    ((torch.rand(1, 2), True), {}),
    ((torch.rand(1, 2), 1.0), {}),
    ((torch.rand(1, 2), 0.0), {}),
    ((torch.rand(1, 2), -0.0), {}),
    ((torch.rand(1, 2), float("nan")), {}),
    ((torch.rand(1, 2), "a"), {}),
    ((torch.rand(1, 2), None), {}),
    ((torch.rand(1, 2),), {"scale": 1}),
    ((torch.rand(1, 2),), {"shift": 1}),
    (((torch.rand(1, 2), 1),), {}),
    (([torch.rand(1, 2), 1],), {}),
    ((torch.rand(1, 2), torch.rand(1, 2)), {}),
    (((torch.rand(1, 2), torch.rand(1, 2)),), {}),
]


def test_equal_keys_mean_equal_descriptions_and_distinct_descriptions_distinct_keys():
    keyed = [(inputs_key(a, k), _described(a, k)) for a, k in CALLS]
    assert all(key is not None for key, _ in keyed)
    for i, (key_a, described_a) in enumerate(keyed):
        for key_b, described_b in keyed[i + 1 :]:
            assert (key_a == key_b) == (repr(described_a) == repr(described_b))


def test_two_calls_with_other_values_of_one_signature_share_a_key():
    assert inputs_key((torch.rand(1, 2), 3), {"s": "x"}) == inputs_key(
        (torch.zeros(1, 2), 3), {"s": "x"}
    )


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")
@pytest.mark.parametrize(
    "make",
    [
        lambda: nn.Parameter(torch.rand(2)),
        lambda: torch.quantize_per_tensor(torch.rand(2), 0.1, 0, torch.quint8),
        lambda: torch.nested.nested_tensor([torch.rand(2), torch.rand(3)]),
        lambda: {"a": torch.rand(2)},
        lambda: torch.float32,
        object,
    ],
    ids=["parameter", "quantized", "nested", "dict", "dtype", "object"],
)
def test_what_only_describing_can_tell_has_no_key(make):
    value = make()
    assert inputs_key((value,), {}) is None
    assert inputs_key((), {"x": value}) is None
