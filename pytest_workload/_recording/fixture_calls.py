"""Models run outside a test's call: a fixture that calls its model in its setup (any scope)
runs it before recording begins, so none of its calls is recorded. The plugin watches each
fixture's setup, and the tests that use a fixture that ran a model say so."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .._torch_internals import GlobalWatch, compiling_check
from .recorder import COMPILE_HOOK_WARNING


@contextmanager
def module_calls() -> Iterator[list[str]]:
    """The class name of the first module called in the block, if any (none where torch is not
    imported: then no module can run). The watch takes itself out at that first call, so the
    rest of the block (a compile, an export, a trace of the model) runs as without it; dynamo
    traces it as a no-op, as it does the recorder's."""
    called: list[str] = []
    if "torch" not in sys.modules:
        yield called
        return
    compiling = compiling_check()

    def watch(module: Any, args: Any) -> None:
        if compiling():
            return
        called.append(type(module).__qualname__)
        watcher.suspend()

    watcher = GlobalWatch(watch, lambda module, args: None)  # (it opens no root here)
    try:
        with warnings.catch_warnings():
            # (torch.compile warns while a global hook exists: a fixture may compile its model)
            warnings.filterwarnings("ignore", message=COMPILE_HOOK_WARNING)
            yield called
    finally:
        watcher.remove()
