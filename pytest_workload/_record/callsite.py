"""Where a root was called from: the test's own line, and the name it gave the module."""

from __future__ import annotations

import functools
import inspect
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torch import nn

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@functools.cache
def _is_internal(filename: str) -> bool:
    import torch

    path = os.path.abspath(filename)
    return path.startswith((os.path.dirname(os.path.abspath(torch.__file__)), _PACKAGE_DIR))


def call_site(module: nn.Module, target: nn.Module, rootdir: str | None) -> tuple[str, str | None]:
    """Name and location of the code that called a root: the first frame, walking out
    from this hook, that is neither torch's nor this package's. Only looked up for new
    workloads and errors, never on the repeated-call path."""
    fallback = type(target).__name__
    caller = inspect.currentframe()
    while caller is not None and _is_internal(caller.f_code.co_filename):
        caller = caller.f_back
    if caller is None:
        return fallback, None
    name = next(
        (k for k, v in caller.f_locals.items() if v is module and k != "self"),
        fallback,
    )
    filename = os.path.abspath(caller.f_code.co_filename)
    if rootdir is not None and filename.startswith(rootdir + os.sep):
        filename = os.path.relpath(filename, rootdir)
    return name, f"{filename}:{caller.f_lineno}"
