"""Performance baselines: one small JSON file per workload hash, per device identity.

Layout: ``<baseline dir>/<device identity slug>/<workload hash>.json``. One file per workload
means two branches that add or refresh different workloads never conflict, and a reviewer sees
exactly which timings moved. Files are text, written atomically, never unpickled.
"""

from __future__ import annotations

import json
from pathlib import Path

from .._core.errors import CorruptFileError
from .._core.files import read_json_file, write_text_atomic
from .baseline import Baseline
from .device_identity import DeviceIdentity


class BaselineStore:
    """The baselines of one device identity under a directory."""

    def __init__(self, root: Path, device: DeviceIdentity, within: Path | None = None) -> None:
        self.device = device
        self.directory = root / device.slug
        #: The root no write leaves through a symlink.
        self.within = within
        self._all: list[Baseline] | None = None
        #: Files :meth:`all` could not read, as errors naming them (each reported once).
        self.unreadable: list[CorruptFileError] = []

    def path(self, workload_hash: str) -> Path:
        return self.directory / f"{workload_hash}.json"

    def get(self, workload_hash: str) -> Baseline | None:
        path = self.path(workload_hash)
        if not path.exists():
            return None
        baseline = _read(path)
        if baseline.hash != workload_hash:
            raise CorruptFileError(
                str(path), f"holds the baseline of hash {baseline.hash}, not of its own name"
            )
        return baseline

    def all(self) -> list[Baseline]:
        """Every readable baseline of this device identity (read once), for nearest-shape
        lookups; one corrupt file is left out (and listed in ``unreadable``), not fatal."""
        if self._all is None:
            files = sorted(self.directory.glob("*.json")) if self.directory.is_dir() else []
            self._all = []
            for p in files:
                try:
                    self._all.append(_read(p))
                except CorruptFileError as exc:
                    self.unreadable.append(exc)
        return self._all

    def put(self, baseline: Baseline) -> Path:
        path = self.path(baseline.hash)
        text = json.dumps(baseline.to_dict(), indent=2, ensure_ascii=False) + "\n"
        write_text_atomic(path, text, within=self.within)
        self._all = None
        return path


def _read(path: Path) -> Baseline:
    return read_json_file(path, Baseline.from_dict, "workload baseline")
