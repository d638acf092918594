"""A workload's deterministic costs: what its traced call moved and allocated.

Counted from the operations' tensors, never timed, so the same on every machine and under any
load: bytes read and written, operations by name, and the peak of the bytes allocated during
the call and alive at once (``peak_bytes``; on CUDA also the device allocator's peak,
``device_peak_bytes``). A list that stops where the operations follow the data (see
:mod:`.computation`) has costs over the same operations, marked ``partial``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._core.canonical import Json
from .._core.errors import WorkloadDataError
from .._core.fields import read_count, read_field, read_object


@dataclass(frozen=True)
class Costs:
    """``ops``: (operation name, count), sorted by name."""

    bytes_read: int
    bytes_written: int
    peak_bytes: int
    ops: tuple[tuple[str, int], ...] = ()
    partial: bool = False
    device_peak_bytes: int | None = None

    def to_dict(self) -> dict[str, Json]:
        out: dict[str, Json] = {
            "bytes_read": self.bytes_read,
            "bytes_written": self.bytes_written,
            "peak_bytes": self.peak_bytes,
        }
        if self.device_peak_bytes is not None:
            out["device_peak_bytes"] = self.device_peak_bytes
        if self.partial:
            out["partial"] = True
        out["ops"] = dict(self.ops)
        return out

    @classmethod
    def from_dict(cls, data: object) -> Costs:
        d = read_object(data, "costs")
        ops = read_field(d, "ops", dict)
        if not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in ops.values()):
            raise WorkloadDataError("costs: 'ops' must map operation names to counts > 0")
        return cls(
            bytes_read=read_count(d, "bytes_read", 0),
            bytes_written=read_count(d, "bytes_written", 0),
            peak_bytes=read_count(d, "peak_bytes", 0),
            ops=tuple(sorted(ops.items())),
            partial=read_field(d, "partial", bool, optional=True) or False,
            device_peak_bytes=read_count(d, "device_peak_bytes", 0, optional=True),
        )
