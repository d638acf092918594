"""The data layer: a report's workload and a snapshot's entry are one record in two JSON forms,
read with the same strictness."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from pytest_workload import Workload
from pytest_workload._core.errors import WorkloadDataError
from pytest_workload._workload.signature import InputSignature
from pytest_workload._workload.workload import ParamStats, UserKey


def _workload() -> Workload:
    return Workload(
        name="model",
        class_name="m.Net",
        depth=0,
        parent=None,
        structure_hash="a" * 64,
        input_signature=InputSignature(({"tensor": [1, 3], "dtype": "float32"},)),
        hash="b" * 64,
        calls=1,
        params=ParamStats(3, 12, ("float32",)),
        arg_names=("x",),
        submodules=(("stem", "c" * 64),),
        structure_hash_without_dtypes="d" * 64,
    )


def _both() -> list[tuple[Callable[[dict], Workload], dict]]:
    w = _workload()
    return [(Workload.from_dict, w.to_dict()), (Workload.from_snapshot, w.to_snapshot())]


def test_a_snapshot_keeps_a_workload_without_what_depends_on_the_run():
    w = dataclasses.replace(
        _workload(), location="t.py:3", total_time_s=0.5, user_keys=(UserKey("k", 2, 3),)
    )
    stored = w.to_snapshot()
    for run in ("calls", "caller", "location", "total_time_s", "timing", "measured", "key"):
        assert run not in stored and run in w.to_dict()
    assert stored["user_keys"] == [{"key": "k"}]
    assert Workload.from_snapshot(stored) == dataclasses.replace(
        w, calls=0, location=None, total_time_s=None, user_keys=(UserKey("k"),)
    )
    assert Workload.from_dict(w.to_dict()) == w


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("submodules", {"stem": 5}, "submodules must map names to structure hashes"),
        ("arg_names", ["x", 3], "field 'arg_names' must be a list of strings"),
        ("structure_hash", 7, "structure_hash"),
        ("depth", "0", "depth"),
        ("paths", None, "field 'paths' must be list, got NoneType"),
    ],
)
def test_both_readers_reject_the_same_malformed_field(field, value, message):
    for read, data in _both():
        data[field] = value
        with pytest.raises(WorkloadDataError, match=message):
            read(data)


def test_measured_round_trips_and_rejects_an_unknown_way():
    from pytest_workload._workload.timing import (
        FIRST_CALL,
        XDIST_NOT_MEASURED,
        Measured,
        Method,
        not_measured,
        observed,
    )

    for measured in (
        Measured(observed("it writes outside"), FIRST_CALL),
        Measured(XDIST_NOT_MEASURED, not_measured("the replay raised SystemExit: 3")),
    ):
        assert Measured.from_dict(measured.to_dict()) == measured
    # the sentences shown are what they were when they were the data
    assert str(observed("it writes outside")) == "observed calls (it writes outside)"
    assert str(not_measured("the replay raised SystemExit: 3")) == (
        "not measured: the replay raised SystemExit: 3"
    )
    assert [str(FIRST_CALL), str(Method("observed calls"))] == ["first call", "observed calls"]
    data = Measured(XDIST_NOT_MEASURED, FIRST_CALL).to_dict()
    assert data["timing"] == "not measured" and data["timing_left_out"] == "xdist"
    for timing, message in (
        (Method("guessed"), r"measured\.timing 'guessed' is not one of"),
        (Method("first call"), r"measured\.timing 'first call' is not one of"),
        (Method("not measured"), r"measured\.timing 'not measured' needs a reason"),
        (Method("off", None, "later"), r"measured\.timing left out 'later'"),
    ):
        with pytest.raises(WorkloadDataError, match=message):
            Measured(timing, FIRST_CALL)
    with pytest.raises(WorkloadDataError, match="never left out"):
        Measured(XDIST_NOT_MEASURED, XDIST_NOT_MEASURED)


def _layer(name: str, paths: tuple[str, ...] = ()) -> Workload:
    return dataclasses.replace(
        _workload(), name=name, paths=paths, depth=1, parent="b" * 64, hash="e" * 64
    )


def test_paths_are_stored_compressed_and_read_back_name_first():
    layer = _layer("blocks.10", ("blocks.10", "blocks.0", "blocks.2", "blocks.1"))
    assert layer.to_dict()["paths"] == ["blocks.[0-2,10]"]
    assert layer.label == "blocks.[0-2,10]" and _workload().label == "model"
    for read, data in (
        (Workload.from_dict, layer.to_dict()),
        (Workload.from_snapshot, layer.to_snapshot()),
    ):
        found = read(data)
        assert found.paths == ("blocks.10", "blocks.0", "blocks.1", "blocks.2")
        assert found.name == "blocks.10"
    assert Workload.from_dict(layer.to_dict()) == dataclasses.replace(
        layer, paths=("blocks.10", "blocks.0", "blocks.1", "blocks.2")
    )
    assert _workload().paths == ("model",)  # no paths given: its name
    with pytest.raises(ValueError, match="the first path 'a' must be the name 'b'"):
        dataclasses.replace(_workload(), name="b", paths=("a", "b"))


@pytest.mark.parametrize(
    ("paths", "message"),
    [
        (["blocks.[0-2]"], "name 'model' is not one of its paths"),
        (["model", "[2-1]"], "path pattern '\\[2-1\\]': range '2-1' is not written"),
        (["model", "model"], "path 'model' is listed twice"),
        ("model", "field 'paths' must be list"),
        ([["model"]], "a path pattern must be a string, got list"),
    ],
)
def test_both_readers_reject_paths_that_are_malformed_or_miss_the_name(paths, message):
    for read, data in _both():
        data["paths"] = paths
        with pytest.raises(WorkloadDataError, match=message):
            read(data)
