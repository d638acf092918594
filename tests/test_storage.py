import json
import os
import re

import pytest
import torch

from pytest_workload import (
    SessionReport,
    TestWorkloads,
    WorkloadRecorder,
    read_report,
)
from pytest_workload._core.errors import (
    CorruptFileError,
    FutureFormatError,
    OldFormatError,
    WorkloadDataError,
)
from pytest_workload._core.files import write_text_atomic
from pytest_workload._core.notes import Note
from pytest_workload._core.strict_json import MAX_JSON_DEPTH, load_json
from pytest_workload._report.session_report import write_report
from pytest_workload._snapshot.snapshot_files import snapshot_text
from pytest_workload._workload.timing import Timing
from tests.models import TinyNet


@pytest.fixture
def table():
    recorder = WorkloadRecorder("tests/t.py::test", max_depth=1)
    model = TinyNet().eval()
    with recorder.recording(all_roots=True):
        model(torch.rand(1, 3, 8, 8), scale=2.0)
    return recorder.workloads()


def test_snapshot_round_trips_and_is_valid_json(table):
    text = snapshot_text(table)
    assert json.loads(text)["fingerprint_scheme"] == 1
    assert snapshot_text(TestWorkloads.from_snapshot(load_json(text))) == text
    assert '"input": "(float32[1, 3, 8, 8], scale=2.0)"' in text
    assert "time" not in text and "calls" not in text


def test_a_snapshot_with_a_broken_field_is_refused(table):
    with pytest.raises(WorkloadDataError, match="not valid JSON"):
        load_json(snapshot_text(table)[:-10])
    broken = table.to_snapshot()
    del broken["workloads"][0]["hash"]
    with pytest.raises(WorkloadDataError, match="missing field 'hash'"):
        TestWorkloads.from_snapshot(broken)
    broken = table.to_snapshot()
    broken["workloads"][0]["params"]["dtypes"] = ["float32", 16]
    with pytest.raises(WorkloadDataError, match="params: field 'dtypes' must be a list of strings"):
        TestWorkloads.from_snapshot(broken)


def test_json_nested_past_the_bound_but_within_the_parser_s_recursion_is_refused():
    deep = "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1)
    with pytest.raises(WorkloadDataError, match=f"nested more than {MAX_JSON_DEPTH} levels deep"):
        load_json(deep)
    assert load_json(deep[1:-1]) == json.loads(deep[1:-1])


def test_a_fixed_length_or_one_of_a_kind_field_is_refused_when_it_is_not():
    timing = Timing(0.1, 0.01, 10, (0.09, 0.11), "cpu", "replay").to_dict()
    with pytest.raises(WorkloadDataError, match="field 'ci95_s' must hold 2 values"):
        Timing.from_dict({**timing, "ci95_s": [0.09]})
    note = Note("t.py::test", "text").to_dict()
    with pytest.raises(WorkloadDataError, match="field 'kind' must be one of"):
        Note.from_dict({**note, "kind": "guessed"})


@pytest.mark.parametrize(
    ("field", "found", "error", "says"),
    [
        ("pytest_workload_snapshot", 99, FutureFormatError, "snapshot format 99 (this release "),
        ("pytest_workload_snapshot", 0, OldFormatError, "snapshot format 0, older than"),
        ("fingerprint_scheme", 2, FutureFormatError, "fingerprint scheme 2 (this release "),
        ("fingerprint_scheme", 0, OldFormatError, "fingerprint scheme 0, older than"),
    ],
)
def test_a_snapshot_of_another_format_or_scheme_is_refused_before_its_rows(
    table, field, found, error, says
):
    """A table of another scheme is never compared: its hashes mean nothing in this one."""
    other = {**table.to_snapshot(), field: found, "workloads": [None]}
    with pytest.raises(error, match=re.escape(says)):
        TestWorkloads.from_snapshot(other)


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
