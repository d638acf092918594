"""Timing baselines, one small JSON file each, and :func:`judge`, the verdict against one
(docs/explanation/timing.md, "Baselines" and "How the gate decides")."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar, Final, Literal

from .._core.codec import Record, codec
from .._core.errors import CorruptFileError, WorkloadDataError
from .._core.files import BASELINE_FORMAT, read_json_file, write_text_atomic
from .._core.strict_json import Json, read_field, sha256_hex
from .._core.text import one_line
from .._workload.signature import InputSignature, workload_key
from .._workload.timing import Timing
from .._workload.workload import Workload
from .device import DeviceIdentity, device_for

#: Default baseline directory, under the rootdir.
BASELINE_DIRNAME = "__workload_baselines__"

#: Hex digits of a test id's digest in a baseline's file name.
_TEST_DIGEST = 16


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


@dataclass(frozen=True)
class Baseline(Record):
    """The timing one test's workload had on one device identity."""

    #: The test that ran it (its node id).
    test: str
    hash: str
    name: str
    class_name: str = field(metadata=codec(key="class"))
    input: str
    key: list[Json] = field(metadata=codec(read=_read_key))
    device: DeviceIdentity
    timing: Timing
    #: FLOPs of the call timed (None: not counted).
    flops: int | None = None
    #: Compute hash of the call timed (None: not traced).
    compute_hash: str | None = None

    what: ClassVar[str] = "baseline"
    version: ClassVar[tuple[str, int] | None] = ("pytest_workload_baseline", BASELINE_FORMAT)

    @classmethod
    def from_workload(cls, test: str, w: Workload, device: DeviceIdentity) -> Baseline:
        assert w.timing is not None
        which = (test, w.hash, w.name, w.class_name, w.input_signature.format(), w.key)
        return cls(*which, device, w.timing, w.flops, w.compute_hash)

    def other_computation(self, w: Workload) -> str | None:
        """How ``w`` computes something else than the call this baseline timed (None: it does
        not)."""
        if w.flops != self.flops:
            return f"FLOPs {_flops(self.flops)}, now {_flops(w.flops)}"
        if w.compute_hash != self.compute_hash:
            return "other operations (its compute hash differs)"
        return None


def _flops(flops: int | None) -> str:
    return "not counted" if flops is None else f"{flops:,}"


def _read(path: Path) -> Baseline:
    return read_json_file(path, Baseline.from_dict, "workload baseline")


class BaselineStore:
    """The baselines of one device identity under a directory; writes never leave ``within``
    through a symlink."""

    def __init__(self, root: Path, device: DeviceIdentity, within: Path | None = None) -> None:
        self.device = device
        self.directory = root / device.slug
        self.within = within
        self._all: list[Baseline] | None = None
        #: Files :meth:`all` could not read, as errors naming them (each reported once).
        self.unreadable: list[CorruptFileError] = []

    def path(self, workload_hash: str, test: str) -> Path:
        digest = sha256_hex(test)[:_TEST_DIGEST]
        return self.directory / workload_hash / f"{digest}.json"

    def get(self, workload_hash: str, test: str) -> Baseline | None:
        """The baseline of ``test``'s workload ``workload_hash``, whatever its computation."""
        path = self.path(workload_hash, test)
        if not path.exists():
            return None
        baseline = _read(path)
        if (baseline.hash, baseline.test) != (workload_hash, test):
            raise CorruptFileError(
                str(path),
                f"holds the baseline of hash {baseline.hash} in test {one_line(baseline.test)}, "
                "not of its own path",
            )
        return baseline

    def has_any(self, workload_hash: str) -> bool:
        """Whether some test's baseline exists for this workload hash."""
        return any((self.directory / workload_hash).glob("*.json"))

    def all(self) -> list[Baseline]:
        """Every readable baseline of this device identity (read once), for nearest-shape
        lookups; one corrupt file is left out (and listed in ``unreadable``), not fatal."""
        if self._all is None:
            files = sorted(self.directory.glob("*/*.json")) if self.directory.is_dir() else []
            self._all = []
            for p in files:
                try:
                    self._all.append(_read(p))
                except CorruptFileError as exc:
                    self.unreadable.append(exc)
        return self._all

    def put(self, baseline: Baseline) -> Path:
        path = self.path(baseline.hash, baseline.test)
        text = json.dumps(baseline.to_dict(), indent=2, ensure_ascii=False) + "\n"
        write_text_atomic(path, text, within=self.within)
        self._all = None
        return path


#: Relative slowdown allowed before the gate fails (0.15 = 15% slower).
DEFAULT_TOLERANCE: Final = 0.15


DriftKind = Literal["regression", "faster", "unchanged", "too few samples", "not comparable"]

#: What decided a verdict: the calibrated ratio, or wall time (no calibration).
Evidence = Literal["calibrated", "wall"]


@dataclass(frozen=True)
class Drift:
    kind: DriftKind
    #: Current over baseline (calibrated where both sides are), and its 95% interval.
    ratio: float
    ratio_low: float
    ratio_high: float
    tolerance: float
    evidence: Evidence = "wall"
    #: Current wall-time median over the baseline's, what a user reads beside ``ratio``.
    wall_ratio: float = math.nan
    #: Current calibration kernel's time over the baseline's: how much slower the machine ran.
    machine_ratio: float | None = None

    def figure(self) -> str:
        """The deciding ratio, and its 95% interval where both timings have one."""
        what = "calibrated ratio" if self.evidence == "calibrated" else "wall-time ratio"
        if self.kind == "too few samples" or not math.isfinite(self.ratio_low):
            return f"{what} {self.ratio:.2f}x"
        return (
            f"{what} {self.ratio:.2f}x (95% interval {self.ratio_low:.2f}–{self.ratio_high:.2f}x)"
        )


def judge(current: Timing, baseline: Timing, tolerance: float = DEFAULT_TOLERANCE) -> Drift:
    """Compare a timing with its baseline; ``ratio`` > 1 means slower."""
    wall = current.median_s / baseline.median_s
    low, high = current.ci_s[0] / baseline.ci_s[1], current.ci_s[1] / baseline.ci_s[0]
    drift = Drift("unchanged", wall, low, high, tolerance, "wall", wall)
    # both at the machine speed of the baseline (its kernel's time)
    kernel, kernel_now = baseline.calibration_s, current.calibration_s
    if kernel is not None and kernel_now is not None:
        now, then = current.calibrated(kernel), baseline.calibrated(kernel)
        if now is not None and then is not None:
            (cur, cur_low, cur_high), (base, base_low, base_high) = now, then
            ratios = (cur / base, cur_low / base_high, cur_high / base_low)
            drift = Drift("unchanged", *ratios, tolerance, "calibrated", wall, kernel_now / kernel)
    if not (current.has_interval and baseline.has_interval):
        return replace(drift, kind="too few samples")
    machine_limit = device_for(current.device).kernel_limit
    if (
        drift.machine_ratio is not None
        and machine_limit is not None
        and not 1 / machine_limit <= drift.machine_ratio <= machine_limit
    ):
        return replace(drift, kind="not comparable")
    limit = 1 + tolerance
    if drift.ratio > limit and drift.ratio_low > limit:
        return replace(drift, kind="regression")
    if drift.ratio < 1 / limit and drift.ratio_high < 1 / limit:
        return replace(drift, kind="faster")
    return drift


def worth_retiming(drift: Drift) -> bool:
    """Whether a timing's median lies beyond the tolerance, either way, proven or not: timed
    again, it is judged on more samples (faster is doubted too: see the module's docs)."""
    limit = 1 + drift.tolerance
    doubtful = drift.kind in ("regression", "unchanged", "faster")
    return doubtful and not 1 / limit <= drift.ratio <= limit
