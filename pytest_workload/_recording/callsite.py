"""Where a root was called from: the test's own line, and the name it gave the module.

A module called at top level by a method of the module that owns it (``forward_features``
calling ``self.layer1``) is named by its path there, after the owner's own name
(``model.layer1``), so that the children one method calls are told apart.
"""

from __future__ import annotations

import functools
import inspect
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from types import FrameType

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
    name = _local_name(caller, module) or _path_in_owner(caller, module) or fallback
    filename = os.path.abspath(caller.f_code.co_filename)
    if rootdir is not None and filename.startswith(rootdir + os.sep):
        filename = os.path.relpath(filename, rootdir)
    return name, f"{filename}:{caller.f_lineno}"


def _local_name(frame: FrameType, module: nn.Module) -> str | None:
    """The name ``frame`` gives ``module`` (other than ``self``), if any."""
    return next((k for k, v in frame.f_locals.items() if v is module and k != "self"), None)


def _path_in_owner(caller: FrameType, module: nn.Module) -> str | None:
    """``owner.path`` when ``caller`` is a method of a module that contains ``module``; the
    owner is named as the first frame further out names it, else by its class."""
    from torch import nn

    owner = caller.f_locals.get("self")
    if not isinstance(owner, nn.Module) or owner is module:
        return None
    path = next((p for p, m in owner.named_modules() if m is module and p), None)
    if path is None:
        return None
    outer = caller.f_back
    while outer is not None:
        name = None if _is_internal(outer.f_code.co_filename) else _local_name(outer, owner)
        if name is not None:
            return f"{name}.{path}"
        outer = outer.f_back
    return f"{type(owner).__name__}.{path}"
