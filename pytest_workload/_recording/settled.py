"""The hot path: a settled root's call reopens the frame of the call that settled it.

Once a root has settled (see ``states``), a call of it whose raw inputs (``inputs_key``) are
those of the call that settled it, in a tree whose identity still stands (the identity cache's
generation, its key and its attribute watch), is described, looked up and framed as that call
was: it reopens that call's frame and is counted straight into its row. Any other call takes
the full path, which keeps the frame of each call that settles.

The frame is the same object: a root opens with no call in progress, and a settled call is
counted into its row, which keeps none of it. A settled call that turned out to be a new
workload (its tree changed while it ran) is filed as a row of its own, and the identity
cache's generation moved with the change, so its frame is never opened again.
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
