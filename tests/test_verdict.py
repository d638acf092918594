"""The snapshot gate's one verdict: each named outcome from a file as the extension reads it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from pytest_workload import TestWorkloads, WorkloadRecorder
from pytest_workload._core.text import PLAIN
from pytest_workload._snapshot.snapshot_files import Stored, read_stored, snapshot_text
from pytest_workload._snapshot.verdict import Verdict, judge
from tests.models import TinyNet


def _document(size: int) -> TestWorkloads:
    model, recorder = TinyNet().eval(), WorkloadRecorder("t", max_depth=0)
    with recorder.recording(all_roots=True):
        model(torch.rand(1, 3, size, size))
    return recorder.workloads().folded()


RECORDED = _document(8)
#: What the file holds, by name: written to disk and read back as the extension reads it.
FILES = {
    "none": None,
    "same": snapshot_text(RECORDED),
    "other": snapshot_text(_document(16)),
    "too new": json.dumps({"pytest_workload_snapshot": 99, "fingerprint_scheme": 1}),
    "corrupt": "{not json",
}


def _judged(tmp_path: Path, held: str, **how: bool) -> tuple[Verdict, str | None]:
    path = tmp_path / "t.workloads"
    text = FILES[held]
    if text is not None:
        path.write_text(text, encoding="utf-8")
    settings = {"updating": False, "accept_upgrade": False, "judge_signatures": True, **how}
    return judge(read_stored(path), RECORDED, "t", tolerance=0.0, commands=PLAIN, **settings)


@pytest.mark.parametrize(
    ("held", "how", "verdict"),
    [
        ("same", {}, Verdict.MATCHED),
        ("same", {"updating": True}, Verdict.MATCHED),
        ("none", {}, Verdict.MISSING),
        ("none", {"updating": True}, Verdict.WRITE),
        ("none", {"updating": True, "accept_upgrade": True}, Verdict.REFUSED),
        ("other", {}, Verdict.CHANGED),
        ("other", {"updating": True}, Verdict.WRITE),
        ("too new", {"updating": True}, Verdict.REFUSED),
        ("corrupt", {}, Verdict.REFUSED),
        ("corrupt", {"updating": True}, Verdict.WRITE),
    ],
)
def test_each_file_gets_its_named_verdict(tmp_path, held, how, verdict):
    judged, text = _judged(tmp_path, held, **how)
    assert judged is verdict
    failing = verdict in (Verdict.MISSING, Verdict.CHANGED, Verdict.REFUSED)
    assert judged.fails is failing
    assert text is not None or verdict in (Verdict.MATCHED, Verdict.WRITE)


def test_a_rewritten_corrupt_file_is_a_note_not_a_failure(tmp_path):
    verdict, text = _judged(tmp_path, "corrupt", updating=True)
    assert not verdict.fails
    assert text is not None and text.startswith("rewrote corrupt workload snapshot t")


def test_nothing_recorded_and_nothing_stored_is_nothing_to_check(tmp_path):
    empty = TestWorkloads("t", ())
    judged = judge(
        read_stored(tmp_path / "none.workloads"),
        empty,
        "t",
        updating=False,
        accept_upgrade=False,
        judge_signatures=True,
        tolerance=0.0,
        commands=PLAIN,
    )
    assert judged == (Verdict.NOTHING, None)


def test_the_one_read_keeps_what_a_write_replaces(tmp_path):
    path = tmp_path / "t.workloads"
    assert read_stored(path) == Stored()
    path.write_bytes(b"\xff{}")
    stored = read_stored(path)
    assert stored.held == (b"\xff{}",)
    assert stored.text == "\udcff{}"  # kept as an escape: it matches only itself
    assert stored.corrupt == "not UTF-8 text (byte 0)"
