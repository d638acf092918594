"""The data layer: a report's workload and a snapshot's entry share one schema for the fields
they both hold, read with the same strictness."""

from __future__ import annotations

import pytest

from pytest_workload import InputSignature, ParamStats, Workload, WorkloadDataError
from pytest_workload._model.snapshot import SnapshotEntry


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


def _both() -> list[tuple[type, dict]]:
    w = _workload()
    return [(Workload, w.to_dict()), (SnapshotEntry, SnapshotEntry.from_workload(w).to_dict())]


def test_an_entry_is_derived_from_its_workload_field_by_field():
    w = _workload()
    entry = SnapshotEntry.from_dict(SnapshotEntry.from_workload(w).to_dict())
    for name in ("name", "class_name", "depth", "parent", "structure_hash", "input_signature"):
        assert getattr(entry, name) == getattr(w, name)
    assert (entry.hash, entry.submodules, entry.arg_names) == (w.hash, w.submodules, w.arg_names)
    assert entry.structure_hash_without_dtypes == w.structure_hash_without_dtypes
    assert Workload.from_dict(w.to_dict()) == w


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("submodules", {"stem": 5}, "submodules must map names to structure hashes"),
        ("arg_names", ["x", 3], "field 'arg_names' must be a list of strings"),
        ("structure_hash", 7, "structure_hash"),
        ("depth", "0", "depth"),
    ],
)
def test_both_readers_reject_the_same_malformed_field(field, value, message):
    for cls, data in _both():
        data[field] = value
        with pytest.raises(WorkloadDataError, match=message):
            cls.from_dict(data)


def test_measured_round_trips_and_rejects_an_unknown_way():
    from pytest_workload._model.measured import Measured

    measured = Measured("observed calls (it writes outside)", "first call")
    assert Measured.from_dict(measured.to_dict()) == measured
    assert Measured("not measured: the replay raised SystemExit: 3", "replayed").flops
    with pytest.raises(WorkloadDataError, match=r"measured\.timing 'guessed'"):
        Measured("guessed", "first call")


def test_a_schema_1_report_is_still_read_without_measured():
    from pytest_workload import SessionReport

    w = _workload()
    data = w.to_dict()
    del data["measured"]
    report = {"schema_version": 1, "fingerprint_scheme": 1, "tests": []}
    report["tests"] = [{"nodeid": "t.py::t", "workloads": [data]}]
    read = SessionReport.from_dict(report)
    assert read.schema_version == 1 and read.tests[0].workloads[0].measured is None
