"""Models run outside a test's call: a fixture that calls its model in its setup (any scope)
runs it before recording begins, so none of its calls is recorded. The plugin watches each
fixture's setup, and the tests that use a fixture that ran a model say so."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .recorder import COMPILE_HOOK_WARNING


@contextmanager
def module_calls() -> Iterator[list[str]]:
    """The class names of the modules called at top level in the block, in order (empty where
    torch is not imported: then no module can run)."""
    called: list[str] = []
    if "torch" not in sys.modules:
        yield called
        return
    from torch.nn.modules.module import (
        register_module_forward_hook,
        register_module_forward_pre_hook,
    )

    running: list[object] = []

    def enter(module: Any, args: Any) -> None:
        if not running:
            called.append(type(module).__qualname__)
        running.append(module)

    def leave(module: Any, args: Any, output: Any) -> None:
        if running:
            running.pop()

    handles = (
        register_module_forward_pre_hook(enter),
        register_module_forward_hook(leave, always_call=True),
    )
    try:
        with warnings.catch_warnings():
            # (torch.compile warns while a global hook exists: a fixture may compile its model)
            warnings.filterwarnings("ignore", message=COMPILE_HOOK_WARNING)
            yield called
    finally:
        for handle in handles:
            handle.remove()
