"""The tracing of one root call, and of its recorded submodules' calls as spans in it.

Operations are traced by a function mode (:mod:`.._tracing.tracer`). Where they are not all
visible to it (the root is, or contains, a scripted or compiled module), nothing is traced:
FLOPs are counted at the aten level instead (or, for a compiled root, by its replay), and
every workload of the call says why it has no compute hash.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, ExitStack
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .._fingerprint.structure import is_compiled
from .._perf import device_of
from .._torch_internals import torch_function_disabler
from .._tracing import DevicePeak, FlopCount, Trace, counting, device_memory, tracing
from .._workload.computation import Computation

if TYPE_CHECKING:
    from torch import nn

    from .plan import Plan


def untraced() -> AbstractContextManager[None]:
    """Around the recorder's own tensor reads: no function mode (the tracer's, or one the test
    entered) and no tensor subclass sees them, so they are never the program's operations and
    read the same in a traced call as in any other."""
    return torch_function_disabler()()


class RootTrace:
    """Entered when a traced root call begins, by :meth:`start`; :meth:`end` leaves it
    (idempotent)."""

    def __init__(self, module: nn.Module, plan: Plan) -> None:
        self.opaque = plan.opaque
        self._exit = ExitStack()
        self._trace: Trace | None = None
        self.counts: Trace | FlopCount | None = None
        self._root: Computation | None = None
        self._counted = plan.opaque is None or not is_compiled(module)
        self.building = False
        self._device_peak: DevicePeak | None = None

    def start(self, target: nn.Module, inputs: Any) -> None:
        from torch.nn.parameter import is_lazy

        #: a lazy module builds its parameters in this call: not the computation of later ones
        self.building = any(is_lazy(t) for t in (*target.parameters(), *target.buffers()))
        if self.opaque is None:
            args, kwargs = inputs
            memory = device_memory(device_of(target, args, kwargs))
            if memory is not None:
                self._device_peak = DevicePeak(memory)
                self._device_peak.begin()
            self._trace = self._exit.enter_context(tracing(target, inputs))
            self.counts = self._trace
        elif self._counted:  # (a compiled root is counted by its replay)
            self.counts = self._exit.enter_context(counting(target, inputs))

    @property
    def unknown(self) -> str | None:
        """Why the call's workloads have no compute hash (None: they have one)."""
        if self.opaque is not None:
            return self.opaque
        return None if self.counts is None else self.counts.failed

    @property
    def traces_ops(self) -> bool:
        return self._trace is not None

    def open_span(self, path: str) -> bool:
        if self._trace is None:
            return False
        self._trace.open_span(path)
        return True

    def close_span(self, name: str | None) -> Computation | None:
        return None if self._trace is None else self._trace.close_span(name)

    def end(self) -> Computation | None:
        """Stop tracing; the root call's computation (None when not traced)."""
        if self._trace is not None:
            self._root = None if self._trace.failed else self._trace.root()
            self._trace = None
            if self._device_peak is not None and self._root is not None:
                costs = self._root.costs
                assert costs is not None  # (a traced root has them)
                peak = replace(costs, device_peak_bytes=self._device_peak.end())
                self._root = replace(self._root, costs=peak)
        self._exit.close()
        return self._root
