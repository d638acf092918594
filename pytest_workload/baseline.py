"""Performance baselines: one small JSON file per workload hash, per device identity.

Layout: ``<baseline dir>/<device identity slug>/<workload hash>.json``. One file per workload
means two branches that add or refresh different workloads never conflict, and a reviewer sees
exactly which timings moved. Files are text, written atomically, never unpickled.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .data import Workload
from .device import DeviceIdentity
from .errors import WorkloadDataError
from .fingerprint import workload_key
from .jsonfields import read_field, read_object
from .signature import InputSignature, Json
from .storage import read_json_file, write_text_atomic
from .timing import Timing

BASELINE_FORMAT = 1
#: Default baseline directory, under the rootdir.
BASELINE_DIRNAME = "__workload_baselines__"


@dataclass(frozen=True)
class Baseline:
    """The timing a workload had on one device identity."""

    hash: str
    key: list[Json]
    name: str
    class_name: str
    input: str
    device: DeviceIdentity
    timing: Timing

    @classmethod
    def from_workload(cls, w: Workload, device: DeviceIdentity) -> Baseline:
        assert w.timing is not None
        return cls(
            w.hash, w.key, w.name, w.class_name, w.input_signature.format(), device, w.timing
        )

    def to_dict(self) -> dict[str, Json]:
        return {
            "pytest_workload_baseline": BASELINE_FORMAT,
            "hash": self.hash,
            "name": self.name,
            "class": self.class_name,
            "input": self.input,
            "key": self.key,
            "device": self.device.to_dict(),
            "timing": self.timing.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: object) -> Baseline:
        d = read_object(data, "baseline")
        version = read_field(d, "pytest_workload_baseline", int)
        if version != BASELINE_FORMAT:
            raise WorkloadDataError(f"baseline format {version} is not supported")
        return cls(
            hash=read_field(d, "hash", str),
            key=_read_key(d),
            name=read_field(d, "name", str),
            class_name=read_field(d, "class", str),
            input=read_field(d, "input", str),
            device=DeviceIdentity.from_dict(d.get("device")),
            timing=Timing.from_dict(d.get("timing")),
        )


def _read_key(d: Mapping[str, Any]) -> list[Json]:
    """The stored key, checked to be ``[structure_hash, args, kwargs]`` as workload_key built it."""
    key = read_field(d, "key", list)
    if len(key) != 3 or not isinstance(key[0], str):
        raise WorkloadDataError("field 'key' must be [structure hash, args, kwargs]")
    try:
        signature = InputSignature.from_dict({"args": key[1], "kwargs": key[2]})
    except WorkloadDataError as exc:
        raise WorkloadDataError(f"field 'key': {exc}") from None
    return workload_key(key[0], signature)


class BaselineStore:
    """The baselines of one device identity under a directory."""

    def __init__(self, root: Path, device: DeviceIdentity) -> None:
        self.device = device
        self.directory = root / device.slug
        self._all: list[Baseline] | None = None

    def path(self, workload_hash: str) -> Path:
        return self.directory / f"{workload_hash}.json"

    def get(self, workload_hash: str) -> Baseline | None:
        path = self.path(workload_hash)
        if not path.exists():
            return None
        return _read(path)

    def all(self) -> list[Baseline]:
        """Every baseline of this device identity (read once), for nearest-shape lookups."""
        if self._all is None:
            files = sorted(self.directory.glob("*.json")) if self.directory.is_dir() else []
            self._all = [_read(p) for p in files]
        return self._all

    def put(self, baseline: Baseline) -> Path:
        path = self.path(baseline.hash)
        write_text_atomic(path, json.dumps(baseline.to_dict(), indent=2, ensure_ascii=False) + "\n")
        self._all = None
        return path


def _read(path: Path) -> Baseline:
    return read_json_file(path, Baseline.from_dict, "workload baseline")
