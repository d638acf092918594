"""Which frame of a call stack is the user's: not torch's, not this package's, and not a
wrapper between them (the standard library's ``functools``/``contextlib``, or
``typing_extensions``' ``@deprecated``, which torch puts on some of its functions)."""

from __future__ import annotations

import functools
import os
import sys
import sysconfig
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from types import FrameType

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@functools.cache
def _skipped_dirs() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Directories whose code is never the user's, and those inside them that may be."""
    import torch

    paths = sysconfig.get_paths()
    stdlib = os.path.abspath(paths["stdlib"])
    sites = tuple(os.path.abspath(paths[k]) + os.sep for k in ("purelib", "platlib"))
    torch_dir = os.path.dirname(os.path.abspath(torch.__file__))
    return (torch_dir + os.sep, _PACKAGE_DIR + os.sep, stdlib + os.sep), sites


@functools.cache
def is_user_file(filename: str) -> bool:
    path = os.path.abspath(filename)
    skipped, sites = _skipped_dirs()
    if path.startswith(skipped[:2]):
        return False
    # (a site-packages inside the standard library's directory holds user code)
    return not path.startswith(skipped[2]) or path.startswith(sites)


def is_user_frame(frame: FrameType) -> bool:
    if frame.f_globals.get("__name__") == "typing_extensions":
        return False
    return is_user_file(frame.f_code.co_filename)


def user_frame(frame: FrameType | None) -> FrameType | None:
    """``frame`` or the first frame out from it that is the user's; None when none is."""
    while frame is not None and not is_user_frame(frame):
        frame = frame.f_back
    return frame


def site(frame: FrameType, base: str | None) -> str:
    """``path:line`` of a frame, relative to ``base`` when inside it."""
    path = os.path.abspath(frame.f_code.co_filename)
    if base is not None and path.startswith(base + os.sep):
        path = os.path.relpath(path, base)
    return f"{path}:{frame.f_lineno}"


def portable_site(filename: str, line: int, base: str | None) -> str:
    """``path:line`` as a snapshot stores it, the same on every machine: an installed library's
    module path (``transformers/models/bert/modeling_bert.py``, also from a venv inside
    ``base``), else relative to ``base`` when inside it, else to the longest ``sys.path``
    directory that holds it, else absolute."""
    path = os.path.abspath(filename)
    library = next((d for d in _skipped_dirs()[1] if path.startswith(d)), None)
    if library is not None:
        return f"{os.path.relpath(path, library)}:{line}"
    if base is not None and path.startswith(base + os.sep):
        return f"{os.path.relpath(path, base)}:{line}"
    roots = (os.path.abspath(p or os.curdir) + os.sep for p in sys.path)
    holding = max((r for r in roots if path.startswith(r)), key=len, default=None)
    shown = path if holding is None else os.path.relpath(path, holding)
    return f"{shown}:{line}"
