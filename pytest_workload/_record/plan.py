"""Which modules of a root are recorded: the root and its submodules down to a depth.

Depth counts module nesting, with ``ModuleList``/``ModuleDict`` containers (which are never
called) not counting as a level, so ``model.layers[3]`` is depth 1 like ``model.blocks``.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._identity.structure import is_compiled, is_scripted, unwrap

if TYPE_CHECKING:
    from torch import nn


@dataclass(slots=True)
class Plan:
    """How calls of one root module are recorded; built once per recording."""

    target: nn.Module
    scripted: bool
    max_depth: int
    # id -> (module, path, depth, unwrapped module) for the root (path "") and its submodules
    members: dict[int, tuple[nn.Module, str, int, nn.Module]]


def build_plan(module: nn.Module, max_depth: int) -> Plan:
    target = unwrap(module)
    plan = Plan(target, is_scripted(module), max_depth, {id(module): (module, "", 0, target)})
    if not plan.scripted and not is_compiled(module):
        for sub, path, depth in subtree(target, max_depth):
            plan.members[id(sub)] = (sub, path, depth, unwrap(sub))
    return plan


def subtree(target: nn.Module, max_depth: int) -> list[tuple[nn.Module, str, int]]:
    """Submodules of ``target`` with their path and depth, down to ``max_depth``."""
    found: list[tuple[nn.Module, str, int]] = []
    seen = {id(target)}
    queue: deque[tuple[nn.Module, str, int]] = deque([(target, "", 0)])
    while queue:
        parent, prefix, depth = queue.popleft()
        for name, child in parent.named_children():
            path = f"{prefix}.{name}" if prefix else name
            child_depth = depth if _is_container(child) else depth + 1
            if child_depth > max_depth or id(child) in seen or is_scripted(child):
                continue
            seen.add(id(child))
            if not _is_container(child):
                found.append((child, path, child_depth))
            if unwrap(child) is child:  # wrappers are recorded, their insides are opaque
                queue.append((child, path, child_depth))
    return found


def _is_container(module: nn.Module) -> bool:
    from torch import nn

    return isinstance(module, (nn.ModuleList, nn.ModuleDict))
