"""What a new root is called: the name the test's own code gave it where it was called, or
its path in the module whose method called it (docs/explanation/recording.md, "Which calls
become workloads")."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

from .._core.frames import is_user_frame, site, user_frame

if TYPE_CHECKING:
    from types import FrameType

    from torch import nn


def call_site(module: nn.Module, target: nn.Module, rootdir: str | None) -> tuple[str, str | None]:
    """Name and location of the code that called a root: the first frame, walking out
    from this hook, that is neither torch's nor this package's. Only looked up for new
    workloads and errors, never on the repeated-call path."""
    fallback = type(target).__name__
    caller = user_frame(inspect.currentframe())
    if caller is None:
        return fallback, None
    name = _local_name(caller, module) or _path_in_owner(caller, module) or fallback
    return name, site(caller, rootdir)


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
        name = _local_name(outer, owner) if is_user_frame(outer) else None
        if name is not None:
            return f"{name}.{path}"
        outer = outer.f_back
    return f"{type(owner).__name__}.{path}"
