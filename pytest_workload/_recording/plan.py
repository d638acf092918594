"""How a root's calls are recorded: which modules (the root and its submodules down to a depth,
containers not counting as a level: docs/explanation/recording.md, "Submodules"), and the
tracing of one root call, with its recorded submodules' calls as spans in it. A root that is, or
contains, a scripted or compiled module is not traced (docs/explanation/hashes.md, "When the
operations are not visible"): its FLOPs are counted at the aten level, or by its replay.
"""

from __future__ import annotations

from collections import deque
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from .._fingerprint.structure import is_compiled, is_scripted, unwrap
from .._perf import PeakMemory, device_for, device_of
from .._torch_internals import torch_function_disabler
from .._tracing import FlopCount, Trace, counting, tracing
from .._workload.computation import Computation

if TYPE_CHECKING:
    from torch import nn


def untraced() -> AbstractContextManager[None]:
    """Around the recorder's own tensor reads: no function mode (the tracer's, or one the test
    entered) and no tensor subclass sees them, so they are never the program's operations and
    read the same in a traced call as in any other."""
    return torch_function_disabler()()


@dataclass(slots=True)
class Plan:
    """How calls of one root module are recorded; built once per recording."""

    target: nn.Module
    max_depth: int
    # id -> (module, path, depth, unwrapped module) for the root (path "") and its submodules
    members: dict[int, tuple[nn.Module, str, int, nn.Module]]
    # the modules of ``members``, which hold the recorder's hooks while an unsettled root runs
    modules: tuple[nn.Module, ...]
    # why a function mode cannot see the operations its calls run (it is, or contains, a
    # compiled or scripted module); None when it can
    opaque: str | None
    #: the root is a ``torch.compile`` wrapper, whose calls' compiles are observed
    compiled: bool


def build_plan(module: nn.Module, max_depth: int) -> Plan:
    target = unwrap(module)
    members = {id(module): (module, "", 0, target)}
    if not is_scripted(module) and not is_compiled(module):
        for sub, path, depth in subtree(target, max_depth):
            members[id(sub)] = (sub, path, depth, unwrap(sub))
    modules = tuple(member for member, _, _, _ in members.values())
    return Plan(target, max_depth, members, modules, _opaque(module, target), is_compiled(module))


def _opaque(module: nn.Module, target: nn.Module) -> str | None:
    for path, sub in (("", module), *target.named_modules()):
        if is_compiled(sub):
            why = "compiled with torch.compile"
        elif is_scripted(sub):
            why = "scripted with TorchScript"
        else:
            continue
        if not path:
            return f"{why}: its operations are not visible"
        return f"contains {path}, {why}, whose operations are not visible"
    return None


def subtree(target: nn.Module, max_depth: int) -> list[tuple[nn.Module, str, int]]:
    """Submodules of ``target`` with their path and depth, down to ``max_depth``."""
    from torch import nn

    found: list[tuple[nn.Module, str, int]] = []
    seen = {id(target)}
    queue: deque[tuple[nn.Module, str, int]] = deque([(target, "", 0)])
    while queue:
        parent, prefix, depth = queue.popleft()
        for name, child in parent.named_children():
            path = f"{prefix}.{name}" if prefix else name
            container = isinstance(child, (nn.ModuleList, nn.ModuleDict))
            child_depth = depth if container else depth + 1
            if child_depth > max_depth or id(child) in seen or is_scripted(child):
                continue
            seen.add(id(child))
            if not container:
                found.append((child, path, child_depth))
            if unwrap(child) is child:  # wrappers are recorded, their insides are opaque
                queue.append((child, path, child_depth))
    return found


class RootTrace:
    """The tracing of one root call (``inputs``: its args and kwargs), begun as the call
    begins; :meth:`end` ends it. Sites are relative to ``root`` (None: the working
    directory)."""

    def __init__(self, module: nn.Module, plan: Plan, inputs: Any, root: str | None) -> None:
        from torch.nn.parameter import is_lazy

        target, self.opaque = plan.target, plan.opaque
        self._exit = ExitStack()
        self._trace: Trace | None = None
        self.counts: Trace | FlopCount | None = None
        self._device_peak: PeakMemory | None = None
        #: a lazy module builds its parameters in this call: not the computation of later ones
        self.building = any(is_lazy(t) for t in (*target.parameters(), *target.buffers()))
        if self.opaque is None:
            self._device_peak = device_for(device_of(target, *inputs)).peak()
            if self._device_peak is not None:
                self._device_peak.begin()
            self._trace = self._exit.enter_context(tracing(target, inputs, root))
            self.counts = self._trace
        elif not is_compiled(module):  # (a compiled root is counted by its replay)
            self.counts = self._exit.enter_context(counting(target, inputs))

    @property
    def unknown(self) -> str | None:
        """Why the call's workloads have no compute hash (None: they have one)."""
        return self.opaque if self._trace is None else self._trace.failed

    def open_span(self, path: str) -> bool:
        if self._trace is None:
            return False
        self._trace.open_span(path)
        return True

    def close_span(self, name: str | None) -> Computation | None:
        return None if self._trace is None else self._trace.close_span(name)

    def end(self) -> Computation | None:
        """Stop tracing; the root call's computation (None when not traced)."""
        root = None
        if self._trace is not None:
            root = None if self._trace.failed else self._trace.root()
            if self._device_peak is not None and root is not None:
                assert root.costs is not None  # (a traced root has them)
                peak = root.costs.with_value("device_peak_bytes", self._device_peak.end())
                root = replace(root, costs=peak)
        self._exit.close()
        return root
