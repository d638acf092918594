"""The identity a timing baseline belongs to: device model, torch version, threads."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .._core.strict_json import Json, read_field, read_object


@dataclass(frozen=True)
class DeviceIdentity:
    """What a timing depends on besides the workload: device model, torch, threads."""

    kind: str
    name: str
    torch: str
    threads: int

    @property
    def slug(self) -> str:
        """A file-name-safe form, used as the baseline directory of this identity."""
        raw = f"{self.kind}-{self.name}-torch{self.torch}-threads{self.threads}"
        return re.sub(r"[^A-Za-z0-9._+-]+", "_", raw).strip("_")

    def describe(self) -> str:
        return f"{self.kind} {self.name}, torch {self.torch}, {self.threads} threads"

    def to_dict(self) -> dict[str, Json]:
        return {"kind": self.kind, "name": self.name, "torch": self.torch, "threads": self.threads}

    @classmethod
    def from_dict(cls, data: object) -> DeviceIdentity:
        d = read_object(data, "device")
        return cls(
            kind=read_field(d, "kind", str),
            name=read_field(d, "name", str),
            torch=read_field(d, "torch", str),
            threads=read_field(d, "threads", int),
        )
