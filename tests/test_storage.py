import json
import os

import pytest
import torch

from pytest_workload import (
    SessionReport,
    TestWorkloads,
    WorkloadRecorder,
    read_report,
)
from pytest_workload._core.errors import CorruptFileError, WorkloadDataError
from pytest_workload._core.files import write_text_atomic
from pytest_workload._report.session_report import write_report
from pytest_workload._snapshot.document import SnapshotDocument
from tests.models import TinyNet


@pytest.fixture
def table():
    recorder = WorkloadRecorder("tests/t.py::test", max_depth=1)
    model = TinyNet().eval()
    with recorder.recording(all_roots=True):
        model(torch.rand(1, 3, 8, 8), scale=2.0)
    return recorder.workloads()


def test_snapshot_document_round_trips_and_is_valid_json(table):
    doc = SnapshotDocument.of(1, table)
    text = doc.to_text()
    assert json.loads(text)["fingerprint_scheme"] == 1
    assert SnapshotDocument.from_text(text).to_text() == text
    assert '"input": "(float32[1, 3, 8, 8], scale=2.0)"' in text
    assert "time" not in text and "calls" not in text


def test_snapshot_document_rejects_broken_files(table):
    doc = SnapshotDocument.of(1, table)
    with pytest.raises(WorkloadDataError, match="not valid JSON"):
        SnapshotDocument.from_text(doc.to_text()[:-10])
    broken = json.loads(doc.to_text())
    del broken["workloads"][0]["hash"]
    with pytest.raises(WorkloadDataError, match="missing field 'hash'"):
        SnapshotDocument.from_dict(broken)
    broken = json.loads(doc.to_text())
    broken["pytest_workload_snapshot"] = 99
    with pytest.raises(WorkloadDataError, match="snapshot format 99 is not supported"):
        SnapshotDocument.from_dict(broken)
    broken = json.loads(doc.to_text())
    broken["workloads"][0]["params"]["dtypes"] = ["float32", 16]
    with pytest.raises(WorkloadDataError, match="params: field 'dtypes' must be a list of strings"):
        SnapshotDocument.from_dict(broken)


def test_session_report_round_trips(table, tmp_path):
    report = SessionReport(scheme=1, tests=(table,))
    path = tmp_path / "r.json"
    write_report(path, report)
    assert read_report(path) == report
    data = json.loads(path.read_text())
    workload = data["tests"][0]["workloads"][0]
    pinned = {
        "name",
        "class",
        "depth",
        "parent",
        "structure_hash",
        "input_signature",
        "key",
        "hash",
        "calls",
        "params",
    }
    assert pinned <= set(workload)
    assert workload["key"] == [
        workload["structure_hash"],
        workload["input_signature"]["args"],
        workload["input_signature"]["kwargs"],
    ]
    assert TestWorkloads.from_dict(data["tests"][0]) == table


def test_read_report_names_the_bad_file(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{")
    with pytest.raises(CorruptFileError, match=r"bad\.json: is not valid JSON"):
        read_report(path)
    path.write_text('{"schema_version": 7, "tests": []}')
    with pytest.raises(CorruptFileError, match=r"schema_version 7 .*: upgrade") as e:
        read_report(path)
    assert e.value.future


def test_atomic_write_leaves_the_old_file_when_interrupted(tmp_path, monkeypatch):
    path = tmp_path / "snap.workloads"
    path.write_text("old")

    def interrupted(*_):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_text_atomic(path, "new")
    assert path.read_text() == "old"
    assert os.listdir(tmp_path) == ["snap.workloads"]
