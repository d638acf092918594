"""A timing baseline: the timing one workload had on one device identity."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._core.errors import FutureFormatError, OldFormatError, WorkloadDataError
from .._core.files import BASELINE_FORMAT
from .._core.strict_json import Json, read_field, read_object
from .._workload.signature import InputSignature, workload_key
from .._workload.timing import Timing
from .._workload.workload import Workload
from .device_identity import DeviceIdentity

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
    #: FLOPs of the call when the baseline was timed (None in baselines stored without them).
    flops: int | None = None

    @classmethod
    def from_workload(cls, w: Workload, device: DeviceIdentity) -> Baseline:
        assert w.timing is not None
        return cls(
            w.hash,
            w.key,
            w.name,
            w.class_name,
            w.input_signature.format(),
            device,
            w.timing,
            w.flops,
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
            "flops": self.flops,
        }

    @classmethod
    def from_dict(cls, data: object) -> Baseline:
        d = read_object(data, "baseline")
        version = read_field(d, "pytest_workload_baseline", int)
        if version > BASELINE_FORMAT:
            raise FutureFormatError(
                f"baseline format {version} (this release reads format {BASELINE_FORMAT})"
            )
        if version != BASELINE_FORMAT:
            raise OldFormatError(f"baseline format {version}", f"format {BASELINE_FORMAT}")
        return cls(
            hash=read_field(d, "hash", str),
            key=_read_key(d),
            name=read_field(d, "name", str),
            class_name=read_field(d, "class", str),
            input=read_field(d, "input", str),
            device=DeviceIdentity.from_dict(d.get("device")),
            timing=Timing.from_dict(d.get("timing")),
            flops=read_field(d, "flops", int, optional=True),
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
