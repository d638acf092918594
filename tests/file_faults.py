"""What the file-safety tests share: the inner runs' options, the files they compare byte for
byte, and injected faults."""

from __future__ import annotations

import json
import os

import torch

import pytest_workload._core.files as files
from pytest_workload import SessionReport, WorkloadRecorder
from pytest_workload._snapshot.snapshot_files import SNAPSHOT_SUFFIX
from tests.models import TinyNet

GATE = ("--workload-snapshot",)
UPDATE = ("--workload-snapshot", "--snapshot-update")


def snapshots(pytester) -> dict[str, bytes]:
    """Every workload snapshot under the inner run's directory, by path, as bytes."""
    root = pytester.path
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob(f"*{SNAPSHOT_SUFFIX}"))
    }


def stored(pytester, name: str = "test_two_shapes") -> os.PathLike[str]:
    return pytester.path / "__workload_snapshots__" / "test_models" / f"{name}{SNAPSHOT_SUFFIX}"


def no_traceback(result) -> None:
    text = "\n".join(result.outlines + result.errlines)
    assert "Traceback" not in text and "INTERNALERROR" not in text


def deny_writes_under(monkeypatch, directory) -> None:
    """A read-only directory, injected (root may write anywhere)."""
    real = files.tempfile.mkstemp

    def mkstemp(*args, dir=None, **kwargs):
        if dir is not None and str(dir).startswith(str(directory)):
            raise PermissionError(13, "Permission denied")
        return real(*args, dir=dir, **kwargs)

    monkeypatch.setattr(files.tempfile, "mkstemp", mkstemp)


def nest(depth: int) -> str:
    return "[" * depth + "]" * depth


def report_file(tmp_path, mutate=None):
    """A valid one-test report written by a real session, optionally edited as JSON text."""
    recorder = WorkloadRecorder("t.py::test", max_depth=1)
    with recorder.recording(all_roots=True):
        TinyNet().eval()(torch.rand(1, 3, 8, 8))
    text = json.dumps(SessionReport(1, tests=(recorder.workloads(),)).to_dict())
    path = tmp_path / "report.json"
    path.write_text(mutate(text) if mutate else text)
    return path
