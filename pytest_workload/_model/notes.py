"""A note for the end of the run: what one test showed that fails nothing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .canonical import Json
from .fields import read_field, read_object


@dataclass(frozen=True)
class Note:
    """One note and the test it came from. Notes about one workload have the same ``text`` in
    every test that ran it, so the session shows each text once."""

    nodeid: str
    text: str

    def to_dict(self) -> dict[str, Json]:
        return {"nodeid": self.nodeid, "text": self.text}

    @classmethod
    def from_dict(cls, data: Any) -> Note:
        fields = read_object(data, "note")
        return cls(read_field(fields, "nodeid", str), read_field(fields, "text", str))
