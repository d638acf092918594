"""Which modules of a root are recorded: the root and its submodules down to a depth.

Depth counts module nesting, with ``ModuleList``/``ModuleDict`` containers (which are never
called) not counting as a level, so ``model.layers[3]`` is depth 1 like ``model.blocks``.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._fingerprint.structure import is_compiled, is_scripted, unwrap

if TYPE_CHECKING:
    from torch import nn


@dataclass(slots=True)
class Plan:
    """How calls of one root module are recorded; built once per recording."""

    target: nn.Module
    max_depth: int
    # id -> (module, path, depth, unwrapped module) for the root (path "") and its submodules
    members: dict[int, tuple[nn.Module, str, int, nn.Module]]
    # the modules of ``members``, which hold the recorder's hooks while an unsettled root runs
    modules: tuple[nn.Module, ...] = ()
    # why a function mode cannot see the operations its calls run (it is, or contains, a
    # compiled or scripted module); None when it can
    opaque: str | None = None


def build_plan(module: nn.Module, max_depth: int) -> Plan:
    target = unwrap(module)
    plan = Plan(target, max_depth, {id(module): (module, "", 0, target)})
    if not is_scripted(module) and not is_compiled(module):
        for sub, path, depth in subtree(target, max_depth):
            plan.members[id(sub)] = (sub, path, depth, unwrap(sub))
    plan.modules = tuple(member for member, _, _, _ in plan.members.values())
    plan.opaque = _opaque(module, plan)
    return plan


def _why_opaque(module: nn.Module) -> str | None:
    if is_compiled(module):
        return "compiled with torch.compile"
    if is_scripted(module):
        return "scripted with TorchScript"
    return None


def _opaque(module: nn.Module, plan: Plan) -> str | None:
    """Why a function mode cannot see every operation of the root's calls, if it cannot."""
    root = _why_opaque(module)
    if root is not None:
        return f"{root}: its operations are not visible"
    for path, sub in plan.target.named_modules():
        why = _why_opaque(sub)
        if why is not None:
            return f"contains {path}, {why}, whose operations are not visible"
    return None


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
