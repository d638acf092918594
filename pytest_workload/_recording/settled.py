"""The hot path: a settled root's call reopens the frame of the call that settled it.

A call of a settled root (see ``states``) with that call's raw inputs (``inputs_key``), whose
identity still stands (the identity cache's generation, key and attribute watch), reopens that
call's frame and is counted straight into its row: nothing is described, looked up or built.
Any other call takes the full path. Reopening the same object is safe: a root opens with no
call in progress, its row keeps nothing of the frame, and a call whose tree changed while it
ran is filed as a new row with the generation moved, so its frame is never reopened.
"""

from __future__ import annotations

import sys
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from .states import State

if TYPE_CHECKING:
    from torch import nn

    from .identity import IdentityCache
    from .plan import Plan
    from .rows import Call, RowTable


class SettledFrames:
    """Each settled root's frame, by its module's id, with its inputs' key and its plan."""

    def __init__(self, identities: IdentityCache, rows: RowTable) -> None:
        self._identities = identities
        self._rows = rows
        self._frames: dict[int, tuple[Call, Hashable, Plan]] = {}

    def keep(self, frame: Call, raw: Hashable, plan: Plan) -> None:
        """``frame`` opened a settled root's call whose inputs' key is ``raw`` (None: inputs
        only describing tells apart, never reopened)."""
        if raw is not None:
            self._frames[id(frame.module)] = (frame, raw, plan)

    def clear(self) -> None:
        self._frames.clear()

    def reopen(
        self,
        module: nn.Module,
        raw: Hashable,
        call: tuple[tuple[Any, ...], dict[str, Any]],
        max_depth: int,
    ) -> tuple[Call, Plan] | None:
        """The frame of the call that settled ``module``, opened again, with its plan, when
        this call (its inputs' key ``raw``, its arguments ``call``) is one more of it; None
        for any other call."""
        last = self._frames.get(id(module))
        if last is None or last[1] != raw:
            return None
        frame, _, plan = last
        entry, key = frame.entry, frame.key
        assert entry is not None and key is not None  # (a settled call has both)
        if (
            frame.module is not module
            or plan.max_depth != max_depth
            or frame.generation != self._identities.generation
            or entry.life.state is not State.SETTLED
            or self._identities.known(frame.target, key, call) is not frame.identity
        ):
            return None
        frame.ambient, frame.compile_health = sys.exc_info()[1], None
        frame.children.clear()  # (its last call raised within a call of itself)
        return frame, plan

    def counted(self, frame: Call) -> bool:
        """Count a settled root's call that returned into its row; False where its tree
        changed while it ran (then it is a new workload, read afresh)."""
        if frame.generation != self._identities.generation:
            return False
        assert frame.entry is not None  # (a settled call has its row)
        self._rows.count_settled(frame.entry, frame)
        return True
