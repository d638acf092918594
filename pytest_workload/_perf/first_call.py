"""A new workload's first call, observed while the test makes it (docs/explanation/timing.md,
"What is measured"). Its state is captured as it returns, in its forward hook, so a module that
builds itself on its first call is captured as built. :func:`check_compile` hands first calls
to the compile readiness check."""

from __future__ import annotations

import copy
import types
from collections.abc import Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._compile.health import Readiness
from .._compile.observe import ReadyCall, check_readiness
from .._torch_internals import compiled_original
from .._tracing import Trace
from .._workload.signature import dtype_name, qualified_name
from .device import KINDS, device_for

if TYPE_CHECKING:
    from torch import nn

    from .._tracing import FlopCount


@dataclass(frozen=True)
class CallContext:
    """Modes and tensor placement of one call (process-local, never stored)."""

    grad: bool
    inference: bool
    #: (device type, enabled, dtype) per device type
    autocast: tuple[tuple[str, bool, str], ...]
    #: ``training`` of every module of the tree, in ``modules()`` order
    training: tuple[bool, ...]
    #: (name, dtype, device) of every parameter and buffer
    tensors: tuple[tuple[str, str, str], ...]


def _tensors(target: nn.Module) -> tuple[tuple[str, str, str], ...]:
    named = (*target.named_parameters(), *target.named_buffers())
    return tuple((name, dtype_name(t.dtype), str(t.device)) for name, t in named)


def capture(target: nn.Module) -> CallContext:
    import torch

    autocast = tuple(
        (k.kind, torch.is_autocast_enabled(k.kind), dtype_name(torch.get_autocast_dtype(k.kind)))
        for k in KINDS
        if k.autocast
    )
    return CallContext(
        grad=torch.is_grad_enabled(),
        inference=torch.is_inference_mode_enabled(),
        autocast=autocast,
        training=tuple(m.training for m in target.modules()),
        tensors=_tensors(target),
    )


def mismatch(context: CallContext, target: nn.Module) -> str | None:
    """Why ``target`` can no longer compute what its captured call computed (None: it can)."""
    if len(context.training) != sum(1 for _ in target.modules()):
        return "its module tree changed after the call"
    now = _tensors(target)
    if len(now) != len(context.tensors):
        return "its parameters or buffers changed after the call"
    for (name, dtype, device), (_, dtype_now, device_now) in zip(context.tensors, now, strict=True):
        if (dtype, device) != (dtype_now, device_now):
            return f"{name} was {dtype} on {device}, is {dtype_now} on {device_now}"
    return None


@contextmanager
def trained_as(context: CallContext, target: nn.Module) -> Iterator[None]:
    """Run the block with every module in its captured train/eval mode."""
    modules = list(target.modules())
    before = [m.training for m in modules]
    for module, training in zip(modules, context.training, strict=True):
        module.training = training
    try:
        yield
    finally:
        for module, training in zip(modules, before, strict=True):
            module.training = training


@contextmanager
def applied(context: CallContext, target: nn.Module) -> Iterator[None]:
    """Run the block in the captured modes (grad, inference, autocast, train/eval)."""
    import torch

    with ExitStack() as stack:
        stack.enter_context(torch.inference_mode(context.inference))
        stack.enter_context(torch.set_grad_enabled(context.grad))
        for kind, enabled, dtype in context.autocast:
            stack.enter_context(torch.autocast(kind, dtype=getattr(torch, dtype), enabled=enabled))
        stack.enter_context(trained_as(context, target))
        yield


_PLAIN = (int, float, bool, str, bytes, complex, type(None))


def reachable(value: object) -> list[object]:
    """Every tensor reachable from ``value`` through lists, tuples, dicts and the attributes of
    objects, and those objects: each once, in the order first met. A class, a module, a plain
    value or a function is not entered (a module's attributes are its own)."""
    import torch

    found: dict[int, object] = {}
    seen: set[int] = set()

    def walk(value: object) -> None:
        if id(value) in seen:
            return
        seen.add(id(value))
        items: Iterable[object]
        if isinstance(value, torch.Tensor):
            found[id(value)] = value
            return
        if isinstance(value, (list, tuple)):
            items = value
        elif isinstance(value, dict):
            items = value.values()
        elif hasattr(value, "__dict__") and not (
            callable(value) or isinstance(value, (types.ModuleType, *_PLAIN))
        ):
            found[id(value)] = value
            items = vars(value).values()
        else:
            return
        for item in items:
            walk(item)

    walk(value)
    return list(found.values())


def copy_inputs(value: Any) -> tuple[Any, tuple[str, ...]]:
    """A copy of call inputs with every tensor cloned, and the types it could not copy (by
    qualified name): a module, or an object a deep copy refuses (a stream, a lock), is passed
    as it is."""
    import torch

    missing: list[str] = []

    def clone(tensor: torch.Tensor) -> torch.Tensor:
        return tensor.detach().clone().requires_grad_(tensor.requires_grad)

    def kept(value: object, since: int) -> object:
        del missing[since:]
        missing.append(qualified_name(type(value)))
        return value

    def copied(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return clone(value)
        if isinstance(value, (tuple, list)):
            items = [copied(v) for v in value]
            return type(value)(*items) if hasattr(type(value), "_fields") else type(value)(items)
        since = len(missing)
        if isinstance(value, dict):
            pairs = {k: copied(v) for k, v in value.items()}
            if type(value) is dict:
                return pairs
            try:  # a dict subclass (a ``ModelOutput``), with its type and attributes
                mapping = copy.copy(value)
                for k, v in pairs.items():
                    mapping[k] = v
            except Exception:
                return kept(value, since)
            return mapping
        if isinstance(value, (*_PLAIN, torch.dtype, torch.device, torch.Size)):
            return value
        if isinstance(value, torch.nn.Module):
            return kept(value, since)
        # another type (a dataclass, a KV cache, an ``ImageList``): its tensors detached and
        # cloned first, as ``deepcopy`` refuses a tensor with a history
        memo = {id(t): clone(t) for t in reachable(value) if isinstance(t, torch.Tensor)}
        try:
            return copy.deepcopy(value, memo)
        except Exception:
            return kept(value, since)

    return copied(value), tuple(missing)


class FirstCall:
    """Begun in a new root's pre-hook, ended in its forward hook (or when it raised);
    ``copy=False`` for a call that will never be replayed. Once the test has ended, the
    recorder fills in its row's facts and hands it to :func:`.measure_calls`."""

    #: ``name (ClassName)``, as its lines name it
    title: str
    device: str
    #: the workload's hash, which the timing policy's suspect is asked about
    workload_hash: str
    #: why the module no longer is the one called (None: it still is)
    changed: str | None
    #: seconds of the calls observed untraced (without FLOP counting), on the CPU
    observed_s: tuple[float, ...]
    #: how many times the test called it
    calls: int

    def __init__(
        self,
        module: nn.Module,
        target: nn.Module,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        *,
        copy: bool = True,
    ) -> None:
        #: the module called, and the one it unwraps to
        self.module, self.target = module, target
        self.context: CallContext | None = None
        self.args: tuple[Any, ...] = ()
        self.kwargs: dict[str, Any] = {}
        self.unsafe: str | None = None
        if copy:
            (self.args, self.kwargs), missing = copy_inputs((args, kwargs))
            if missing:
                kinds = ", ".join(dict.fromkeys(missing))
                self.unsafe = f"an input is an object it cannot copy ({kinds})"
        #: what counts the call's FLOPs and sees its writes (set once its tracing began)
        self.counts: Trace | FlopCount | None = None
        self.ended = False

    @property
    def captured(self) -> CallContext:
        """The context it returned in (a row keeps only first calls that returned)."""
        assert self.context is not None
        return self.context

    @property
    def flops(self) -> int | None:
        failed = isinstance(self.counts, Trace) and self.counts.failed is not None
        return None if self.counts is None or failed else self.counts.flops

    def end(self, *, returned: bool) -> None:
        if self.ended:
            return
        self.ended = True
        if returned:
            self.context = capture(self.target)
        if self.counts is not None and self.counts.foreign_write is not None:
            self.unsafe = self.counts.foreign_write


def _skipped(call: FirstCall) -> str | None:
    """Why a call's readiness is not checked (None: it is)."""
    if compiled_original(call.module) is not None:
        return "the test compiles it itself (its compile health is observed)"
    if (unforkable := device_for(call.device).unforkable) is not None:
        return unforkable
    # (a structure that changed since is compiled as it is now, in the child: an attribute the
    # forward changes per call is what a recompile shows)
    if (changed := mismatch(call.captured, call.target)) is not None:
        return f"the module changed after its call ({changed})"
    return call.unsafe


def _ready_call(call: FirstCall) -> ReadyCall:
    def run(compiled: nn.Module) -> object:
        import torch

        (args, kwargs), _ = copy_inputs((call.args, call.kwargs))
        # without grad: a process that has run a backward leaves autograd's threads in a
        # state a forked child cannot use, and aot_eager traces the backward with them; the
        # breaks and recompiles are dynamo's, of the forward, either way
        with applied(call.captured, call.target), torch.no_grad():
            return compiled(*args, **kwargs)

    return ReadyCall(call.target, run, min(call.calls, 2))


def check_compile(
    calls: Sequence[FirstCall], backend: str, rootdir: str | None
) -> tuple[list[Readiness | None], list[str]]:
    """Each call's readiness (None: not checked), and a line per call saying why one was
    not."""
    skipped = [_skipped(call) for call in calls]
    checked = [_ready_call(c) for c, why in zip(calls, skipped, strict=True) if why is None]
    found = check_readiness(checked, backend, rootdir) if checked else []
    answers = iter(found if isinstance(found, list) else ())
    results: list[Readiness | None] = []
    lines = []
    for call, why in zip(calls, skipped, strict=True):
        results.append(next(answers) if why is None and isinstance(found, list) else None)
        if results[-1] is None:
            reason = f"not checked: {why}" if why is not None else str(found)
            lines.append(f"{call.title}: compile readiness {reason}")
    return results, lines
