import math

import pytest
import torch

from pytest_workload._fingerprint.describe import describe_args, describe_kwargs
from pytest_workload._fingerprint.distance import distance_factor, nearest
from pytest_workload._workload.signature import InputSignature, workload_key


def key(*args, structure="s" * 64, **kwargs):
    return workload_key(structure, InputSignature(describe_args(args), describe_kwargs(kwargs)))


def t(*shape, dtype=torch.float32):
    return torch.empty(*shape, dtype=dtype, device="meta")


def test_identical_keys_have_factor_one():
    assert distance_factor(key(t(1, 3, 224, 224)), key(t(1, 3, 224, 224))) == 1.0


def test_batch_and_spatial_scaling_multiply():
    assert distance_factor(key(t(8, 3, 224, 224)), key(t(1, 3, 112, 112))) == 32.0


def test_indivisible_dimension_is_incompatible():
    assert math.isinf(distance_factor(key(t(1, 3, 224)), key(t(1, 3, 223))))


def test_the_factor_is_asymmetric():
    assert distance_factor(key(t(8, 3)), key(t(1, 3))) == 8.0
    assert math.isinf(distance_factor(key(t(1, 3)), key(t(8, 3))))


def test_other_structure_or_dtype_is_incompatible():
    assert math.isinf(distance_factor(key(t(2, 3)), key(t(1, 3), structure="x" * 64)))
    assert math.isinf(distance_factor(key(t(2, 3)), key(t(1, 3, dtype=torch.float16))))


def test_zeros_must_be_equal():
    assert distance_factor(key(t(0, 3)), key(t(0, 3))) == 1.0
    assert math.isinf(distance_factor(key(t(0, 3)), key(t(1, 3))))
    assert math.isinf(distance_factor(key(t(4, 3)), key(t(0, 3))))


def test_bools_are_values_not_integers():
    assert distance_factor(key(use_cache=True), key(use_cache=True)) == 1.0
    assert math.isinf(distance_factor(key(use_cache=True), key(use_cache=False)))
    assert math.isinf(distance_factor(key(True), key(1)))
    assert math.isinf(distance_factor(key(2), key(True)))


def test_scalar_integers_divide_like_dimensions():
    assert distance_factor(key(t(1, 4), steps=8), key(t(1, 4), steps=2)) == 4.0
    assert math.isinf(distance_factor(key(2.0), key(1.0)))  # floats must be equal


def test_tensor_boundaries_are_kept():
    flat_a = ["s", [[1, 1], [3, 4]], {}]
    flat_b = ["s", [[1, 1, 3], [4]], {}]
    assert math.isinf(distance_factor(flat_a, flat_b))
    assert math.isinf(distance_factor(key(t(1, 1), t(3, 4)), key(t(1, 1, 3), t(4))))


def test_negative_and_symbolic_dimensions_are_incompatible():
    sym = ["s", [{"tensor": ["s0", 3], "dtype": "float32"}], {}]
    neg = ["s", [{"tensor": [-2, 3], "dtype": "float32"}], {}]
    one = ["s", [{"tensor": [1, 3], "dtype": "float32"}], {}]
    assert math.isinf(distance_factor(sym, one))
    assert math.isinf(distance_factor(neg, one))
    assert math.isinf(distance_factor(sym, sym))
    assert distance_factor(key(dim=-1), key(dim=-1)) == 1.0  # an equal scalar is equal


@pytest.mark.parametrize(
    ("target", "candidate"),
    [
        (None, ["s"]),
        (["s"], "s"),
        ([], []),
        ([1, 2], [1, 2]),
        (["s", {"a": 1}], ["s", [1]]),
        (["s", [1, "a"]], ["s", [1, 2]]),
        (["s", 1.5], ["s", 1]),
    ],
)
def test_mixed_types_never_raise(target, candidate):
    assert math.isinf(distance_factor(target, candidate))


def test_nearest_picks_the_smallest_finite_factor_deterministically():
    target = key(t(8, 3, 64, 64))
    candidates = [
        key(t(1, 3, 64, 64)),
        key(t(4, 3, 32, 32)),
        key(t(2, 3, 64, 64)),
        key(t(3, 3, 64, 64)),
    ]
    assert nearest(target, candidates) == (candidates[2], 4.0)
    tie_a, tie_b = key(t(4, 3, 64, 32)), key(t(4, 3, 32, 64))
    assert nearest(target, [tie_a, tie_b]) == nearest(target, [tie_b, tie_a])
    assert nearest(target, [key(t(3, 3, 64, 64))]) is None


def nested(depth, leaf):
    node = leaf
    for _ in range(depth):
        node = [node]
    return node


def cyclic():
    node: list = []
    node.append(node)
    return node


def tensor_node(shape, **fields):
    return {"tensor": shape, "dtype": "float32", **fields}


@pytest.mark.parametrize(
    "args",
    [
        pytest.param([tensor_node(5)], id="int-shape"),
        pytest.param([tensor_node("abc")], id="str-shape"),
        pytest.param([tensor_node({"a": 1})], id="dict-shape"),
        pytest.param([tensor_node([2], ndarray=[2])], id="two-shape-tags"),
        pytest.param([tensor_node([2], scale=math.nan)], id="nan-field"),
        pytest.param([tensor_node([2], scale=math.inf)], id="inf-field"),
        pytest.param([math.inf], id="inf-arg"),
        pytest.param([10**5000], id="int-too-long-for-json"),
        pytest.param([{1, 2}], id="not-json"),
        pytest.param(cyclic(), id="cycle"),
        pytest.param(nested(5000, 1), id="5000-deep"),
    ],
)
def test_malformed_keys_give_inf_and_never_raise(args):
    malformed = ["s", args, {}]
    assert math.isinf(distance_factor(malformed, malformed))
    assert nearest(malformed, [malformed]) is None
    good = ["s", [tensor_node([2, 3])], {}]
    assert nearest(good, [malformed, good]) == (good, 1.0)


def test_a_malformed_shape_against_a_good_one_is_inf():
    good = ["s", [tensor_node([2, 3])], {}]
    for bad in (5, "abc", {"a": 1}):
        assert math.isinf(distance_factor(["s", [tensor_node(bad)], {}], good))
        assert math.isinf(distance_factor(good, ["s", [tensor_node(bad)], {}]))


def test_huge_factors_stay_exact_until_they_overflow_a_float():
    assert distance_factor(["s", [10**300], {}], ["s", [1], {}]) == 1e300
    assert distance_factor(["s", [10**400], {}], ["s", [1], {}]) == math.inf
    assert distance_factor(["s", [10**200, 10**200], {}], ["s", [1, 1], {}]) == math.inf
    assert nearest(["s", [10**400], {}], [["s", [1], {}]]) is None


def test_deeply_nested_keys_compare_without_recursion():
    assert distance_factor(["s", nested(600, 8)], ["s", nested(600, 2)]) == 4.0
