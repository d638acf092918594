"""What a per-test gate returns: the reasons the test fails, and notes (what it showed that
fails nothing) for the end of the run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal, get_args

from .errors import WorkloadDataError
from .strict_json import Json, read_field, read_object

#: What a note is about. A performance note is about one workload, so a suite has as many as
#: it has workloads: the terminal counts them by kind, the JSON report holds each one.
NoteKind = Literal[
    "baseline recorded",
    "baseline refreshed",
    "baseline not written: xdist",
    "baseline not written: too few samples",
    "baseline not written: cut short",
    "no baseline",
    "no baseline: cut short",
    "faster",
    "not judged: xdist",
    "not judged: too few samples",
    "not judged: kernel",
    "unreadable baseline",
    "measurement",
    "snapshot",
]
NOTE_KINDS: Final[tuple[NoteKind, ...]] = get_args(NoteKind)


@dataclass(frozen=True)
class Note:
    """One note and the test it came from. Notes about one workload have the same ``text`` in
    every test that ran it, so the session shows each text once."""

    nodeid: str
    text: str
    kind: NoteKind = "snapshot"
    #: The hash of the workload a performance note is about: the terminal counts workloads,
    #: whose notes may differ in text from test to test.
    workload: str | None = None

    def to_dict(self) -> dict[str, Json]:
        data: dict[str, Json] = {"nodeid": self.nodeid, "kind": self.kind, "text": self.text}
        if self.workload is not None:
            data["workload"] = self.workload
        return data

    @classmethod
    def from_dict(cls, data: Any) -> Note:
        fields = read_object(data, "note")
        kind = read_field(fields, "kind", str)
        if kind not in NOTE_KINDS:
            raise WorkloadDataError(f"note kind {kind!r} is not one of {NOTE_KINDS}")
        nodeid, text = read_field(fields, "nodeid", str), read_field(fields, "text", str)
        workload = read_field(fields, "workload", str, optional=True)
        return cls(nodeid, text, NOTE_KINDS[NOTE_KINDS.index(kind)], workload)


@dataclass(frozen=True)
class GateResult:
    """One gate's verdict on one test; empty when it has nothing to say."""

    failures: tuple[str, ...] = ()
    notes: tuple[Note, ...] = ()
    #: How many of ``failures`` are performance regressions (the session summary counts them).
    regressions: int = 0
