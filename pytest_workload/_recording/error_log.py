"""Problems of the recorder itself (an input it cannot describe, an internal failure):
collected and reported when the test ends, never raised into the model's forward."""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any


class ErrorLog:
    """Distinct messages in order of first occurrence."""

    def __init__(self) -> None:
        self._messages: list[str] = []

    @property
    def messages(self) -> tuple[str, ...]:
        return tuple(self._messages)

    def add(self, message: str) -> None:
        if message not in self._messages:
            self._messages.append(message)

    def guarded(self, fn: Callable[..., object], *args: Any) -> None:
        """Run ``fn``; an exception it raises is logged, not raised (hooks run inside the
        model's forward)."""
        try:
            fn(*args)
        except Exception:
            self.internal()

    def internal(self) -> None:
        """Log the exception being handled: the recorder failed (never the model)."""
        self.add("internal error while recording:\n" + traceback.format_exc())
