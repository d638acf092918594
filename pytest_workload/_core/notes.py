"""What a per-test gate returns: the reasons the test fails, and notes (what it showed that
fails nothing) for the end of the run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Literal

from .codec import Record, codec

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


@dataclass(frozen=True)
class Note(Record):
    """One note and the test it came from. Notes about one workload have the same ``text`` in
    every test that ran it, so the session shows each text once."""

    nodeid: str
    text: str
    kind: NoteKind = "snapshot"
    #: The hash of the workload a performance note is about: the terminal counts workloads,
    #: whose notes may differ in text from test to test.
    workload: str | None = field(default=None, metadata=codec(omit=True))

    what: ClassVar[str] = "note"


@dataclass(frozen=True)
class GateResult:
    """A verdict on one test, one gate's or the session's over them all; empty when it has
    nothing to say."""

    failures: tuple[str, ...] = ()
    notes: tuple[Note, ...] = ()
    #: How many of ``failures`` are performance regressions (the session summary counts them).
    regressions: int = 0
    #: What fails nothing but is said at the test itself (a pytest warning).
    warnings: tuple[str, ...] = ()
