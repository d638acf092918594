"""Module paths compressed to patterns and expanded back: exact, natural, strict on reading."""

from __future__ import annotations

import random

import pytest

from pytest_workload._core.errors import WorkloadDataError
from pytest_workload._workload.paths import (
    MAX_PATHS,
    compress_paths,
    expand_paths,
    name_first,
    natural_key,
)


def round_trip(paths: list[str]) -> list[str]:
    patterns = compress_paths(paths)
    assert sorted(expand_paths(patterns)) == sorted(set(paths))
    return patterns


def test_a_grid_of_identical_layers_is_one_pattern():
    blocks = [str(i) for i in range(50)]
    layers = [f"{i}.{j}" for i in range(50) for j in range(99)]
    assert round_trip(blocks) == ["[0-49]"]
    assert round_trip(layers) == ["[0-49].[0-98]"]
    assert round_trip([f"blocks.{i}.fc" for i in range(50)]) == ["blocks.[0-49].fc"]


def test_one_path_is_itself_and_integers_are_written_minimally():
    assert round_trip(["blocks.3.fc"]) == ["blocks.3.fc"]
    assert round_trip(["0", "1", "3", "5", "6", "7", "10"]) == ["[0-1,3,5-7,10]"]
    assert round_trip(["layers.0", "layers.1"]) == ["layers.[0-1]"]


def test_names_merge_only_where_one_integer_position_differs():
    paths = ["enc.layers.0", "enc.layers.1", "dec.layers.0", "dec.layers.1", "head"]
    assert round_trip(paths) == ["dec.layers.[0-1]", "enc.layers.[0-1]", "head"]
    # an L-shaped set is no product: two patterns, each exact
    assert round_trip(["0.0", "0.1", "1.0"]) == ["0.1", "[0-1].0"]
    # paths of different lengths never merge
    assert round_trip(["a.0", "a.0.b", "a.1"]) == ["a.0.b", "a.[0-1]"]


def test_patterns_are_sorted_naturally():
    assert round_trip(["x.10", "x.9.y", "x.2.y", "a", "1", "10", "2"]) == [
        "[1-2,10]",
        "a",
        "x.[2,9].y",
        "x.10",
    ]
    assert sorted(["l.10", "l.2", "l.a", "l.1"], key=natural_key) == ["l.1", "l.2", "l.10", "l.a"]
    assert name_first("l.10", ["l.2", "l.10", "l.1", "l.2"]) == ("l.10", "l.1", "l.2")


def test_leading_zeros_and_long_digit_runs_are_names():
    assert round_trip(["01", "1", "001"]) == ["1", "001", "01"]
    long = "9" * 70  # longer than an integer of a set may be: a name, which stands for itself
    assert round_trip([f"a.{long}", "a.1"]) == ["a.1", f"a.{long}"]


def test_brackets_and_backslashes_in_names_are_escaped():
    paths = ["x[1]", "x[1].0", "x[1].1", "a\\b", "[0-3]", "]", "\\"]
    patterns = round_trip(paths)
    assert patterns == ["\\[0-3\\]", "\\\\", "\\]", "a\\\\b", "x\\[1\\]", "x\\[1\\].[0-1]"]
    assert expand_paths(["\\[0-3\\]"]) == ["[0-3]"]  # a name, not four paths


def test_empty_and_odd_names_round_trip():
    assert round_trip([]) == []
    assert round_trip(["", "a..b", "a.", "-1", "1e3", " 1", "a.0", "a.1"]) == [
        "",
        " 1",
        "-1",
        "1e3",
        "a.[0-1]",
        "a.",
        "a..b",
    ]


def test_random_sets_round_trip_exactly():
    rng = random.Random(14)
    names = ["0", "1", "2", "3", "10", "11", "fc", "attn", "01", "x[0]", "a\\", "", "7"]
    for _ in range(400):
        depth = rng.randint(1, 4)
        size = rng.randint(0, 40)
        paths = [".".join(rng.choice(names) for _ in range(depth)) for _ in range(size)]
        patterns = round_trip(paths)
        assert patterns == compress_paths(reversed(paths))  # order does not matter
        assert compress_paths(expand_paths(patterns)) == patterns  # already compressed
        assert len(patterns) <= len(set(paths))


def test_a_dense_random_grid_is_one_pattern_per_hole_free_product():
    rng = random.Random(7)
    for _ in range(50):
        rows, cols = rng.sample(range(30), rng.randint(1, 8)), rng.sample(range(30), 5)
        paths = [f"b.{r}.l.{c}" for r in rows for c in cols]
        assert len(round_trip(paths)) == 1


@pytest.mark.parametrize(
    ("patterns", "message"),
    [
        (["a.[1-0]"], "range '1-0' is not written as low-high"),
        (["a.[3-3]"], "range '3-3' is not written as low-high"),
        (["[0-2,1]"], "'1' overlaps, touches or precedes"),
        (["[0-2,3]"], "'3' overlaps, touches or precedes"),
        (["[5,2]"], "'2' overlaps, touches or precedes"),
        (["[]"], "'' is not an integer or a range"),
        (["[01]"], "'01' is not an integer or a range"),
        (["[a]"], "'a' is not an integer or a range"),
        (["[1-]"], "'1-' is not an integer or a range"),
        ([f"[{'1' * 65}]"], "of at most 64 digits"),
        (["x[1]"], "'x[1]' is neither a name (escape '[' as"),
        (["a]"], "neither a name"),
        (["["], "neither a name"),
        (["a\\"], "ends in a lone"),
        (["a\\b"], "escapes only"),
        (["a.[0-1]", "a.1"], "path 'a.1' is listed twice"),
        ([3], "a path pattern must be a string, got int"),
        ([f"[0-{MAX_PATHS}]"], "stands for more than"),
        (["[0-999].[0-999].[0-9]"], "stands for more than"),
        ([f"[0-{MAX_PATHS // 2}].x", f"[0-{MAX_PATHS // 2}].y"], "more than"),
    ],
)
def test_malformed_patterns_are_refused_with_a_reason(patterns, message):
    with pytest.raises(WorkloadDataError, match="path pattern") as raised:
        expand_paths(patterns)
    assert message in str(raised.value)
