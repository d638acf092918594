"""What a per-test gate returns: the reasons the test fails, and notes for the report."""

from __future__ import annotations

from dataclasses import dataclass

from .notes import Note


@dataclass(frozen=True)
class GateResult:
    """One gate's verdict on one test; empty when it has nothing to say."""

    failures: tuple[str, ...] = ()
    notes: tuple[Note, ...] = ()
    #: How many of ``failures`` are performance regressions (the session summary counts them).
    regressions: int = 0
