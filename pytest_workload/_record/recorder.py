"""Recording: which modules run during a test, with which inputs.

A *root* is a module called while no recorded module is running. While no root runs, one
global forward pre-hook watches for new roots. A module seen as a root gets hooks of its own,
and so do its submodules down to ``max_depth``; they stay until recording ends, so a repeated
call costs three hook calls and no registration. While a root runs, the global hook is removed:
every other module keeps torch's hook-free fast path.

Depth counts module nesting, with ``ModuleList``/``ModuleDict`` containers (which are never
called) not counting as a level, so ``model.layers[3]`` is depth 1 like ``model.blocks``.

A call that raises is not recorded, nor are the calls it made; the exception reaches the caller
untouched. Errors of the recorder itself (an input it cannot describe, an internal failure) are
collected and reported when the test ends, never raised into the model's forward.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import itertools
import os
import threading
import time
import traceback
import warnings
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .._identity.describe import Describer, describe_args, describe_kwargs
from .._identity.fingerprint import CURRENT_SCHEME, FingerprintScheme
from .._identity.structure import (
    StructureMemo,
    child_structure_hashes,
    class_name,
    is_compiled,
    is_scripted,
    param_stats,
    structure_hash_without_dtypes,
    unwrap,
)
from .._measure.replay import Measurement, device_of, replay
from .._measure.timing import TimingPolicy, summarize
from .._model.canonical import Json, canonical_json
from .._model.errors import UndescribableInputError
from .._model.signature import InputSignature
from .._model.timing import Timing
from .._model.workload import AlternateHash, ParamStats, TestWorkloads, UserKey, Workload

if TYPE_CHECKING:
    from torch import nn
    from torch.nn import Parameter
    from torch.utils.hooks import RemovableHandle


M = TypeVar("M", bound="nn.Module")


#: A user's own key function for a call: ``(module, args, kwargs) -> JSON or None``.
Keyer = Callable[["nn.Module", tuple[Any, ...], dict[str, Any]], Json]


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


_COMPILE_HOOK_WARNING = r"Using `torch.compile\(module\)` when there are global hooks"


@dataclass(frozen=True)
class _Static:
    """What a (module, train/eval mode, signature) always yields: computed once per test."""

    target: nn.Module
    signature: InputSignature
    # repr of the described inputs: a process-local key that, unlike JSON, costs little per call
    # and still tells True, 1 and 1.0 apart
    fast_key: str
    structure_hash: str
    structure_hash_without_dtypes: str
    hash: str
    class_name: str
    params: ParamStats
    arg_names: tuple[str, ...]
    submodules: tuple[tuple[str, str], ...]
    alternates: tuple[AlternateHash, ...]
    output: Json
    device: str


@dataclass
class _Done:
    static: _Static
    name: str
    location: str | None
    depth: int
    elapsed_ns: int
    order: int
    children: list[_Done]
    user_key: Json = None
    # the call as made, kept for a replay when this is a new top-level workload
    call: tuple[nn.Module, tuple[Any, ...], dict[str, Any]] | None = None


@dataclass(slots=True)
class _Frame:
    module: nn.Module
    target: nn.Module
    name: str
    depth: int
    record: bool
    order: int
    args: tuple[Json, ...] | None = None
    kwargs: tuple[tuple[str, Json], ...] | None = None
    start_ns: int = 0
    done: _Done | None = None
    children: list[_Done] = field(default_factory=list)


@dataclass(slots=True)
class _Plan:
    """How calls of one root module are recorded; built once per recording."""

    target: nn.Module
    scripted: bool
    max_depth: int
    # id -> (module, path, depth, unwrapped module) for the root (path "") and its submodules
    members: dict[int, tuple[nn.Module, str, int, nn.Module]]


@dataclass
class _Entry:
    done: _Done
    # the calling row; rows are numbered in order of creation
    caller: _Entry | None
    row: int
    calls: int = 0
    total_ns: int = 0
    # a call the clock around it could not time (one that ran off the CPU)
    untimed: bool = False
    # canonical user key -> [key, first call number, calls]
    user_keys: dict[str, list[Any]] = field(default_factory=dict)
    samples_ns: list[int] = field(default_factory=list)
    measurement: Measurement | None = None


_EntryKey = tuple[int | None, str, str, int, str]


def _entry_key(caller: _Entry | None, static: _Static, depth: int, name: str) -> _EntryKey:
    """Rows are keyed by what a workload *is* (structure and inputs), not by its hash, so a
    scheme whose hashes collapse cannot merge rows and hide the collapse. Roots are named by
    their first call site; submodules keep their path, so three identical layers stay three
    rows, and their calling row, so a layer's children stay under that layer."""
    row = None if caller is None else caller.row
    return (row, static.structure_hash, static.fast_key, depth, name if depth else "")


def _clock_times(device: str) -> bool:
    """Whether a clock read around a call on ``device`` times its execution: on CUDA or MPS
    the call returns once its kernels are launched, long before they finish."""
    return device == "cpu"


@functools.cache
def _is_internal(filename: str) -> bool:
    import torch

    path = os.path.abspath(filename)
    return path.startswith((os.path.dirname(os.path.abspath(torch.__file__)), _PACKAGE_DIR))


def _arg_names(module: nn.Module) -> tuple[str, ...]:
    try:
        params = inspect.signature(module.forward).parameters.values()
    except (TypeError, ValueError):
        return ()
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return tuple(p.name for p in params if p.kind in positional)


def _is_container(module: nn.Module) -> bool:
    from torch import nn

    return isinstance(module, (nn.ModuleList, nn.ModuleDict))


class WorkloadRecorder:
    """Records the workloads of one test. Returned by the ``workloads`` fixture.

    ``start()`` records every module called at top level; ``track(model)`` records only the
    modules given. Read the result with ``workloads()`` (or iterate the recorder).
    """

    def __init__(
        self,
        nodeid: str,
        *,
        max_depth: int = 0,
        timing: bool = True,
        scheme: FingerprintScheme = CURRENT_SCHEME,
        describe: Describer | None = None,
        keyer: Keyer | None = None,
        alternate_schemes: Sequence[FingerprintScheme] = (),
        rootdir: Path | None = None,
    ) -> None:
        if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 0:
            raise ValueError(f"max_depth must be an int >= 0, got {max_depth!r}")
        self.nodeid = nodeid
        self.max_depth = max_depth
        self.timing = timing
        self.scheme = scheme
        self._describe = describe
        self._keyer = keyer
        self._rootdir = str(rootdir) if rootdir is not None else None
        self._thread: int | None = None
        self._watch_all = False
        self._global_watch: RemovableHandle | None = None
        self._tracked: dict[int, tuple[nn.Module, int]] = {}
        self._scripted_watch: RemovableHandle | None = None
        self._hooked: dict[int, tuple[nn.Module, list[RemovableHandle]]] = {}
        self._stack: list[_Frame] = []
        self._plan: _Plan | None = None
        self._plans: dict[tuple[int, int], tuple[nn.Module, _Plan]] = {}
        self._script_hooks: list[RemovableHandle] = []
        self._order = itertools.count()
        self._alternates = tuple(s for s in alternate_schemes if s.version != scheme.version)
        self._known: dict[tuple[int, bool, object, object, str], _Static] = {}
        self._first_owner: dict[int, tuple[nn.Module, nn.Module | None, str]] = {}
        self._registration_watch: list[RemovableHandle] = []
        self._entries: dict[_EntryKey, _Entry] = {}
        self._errors: list[str] = []
        self._stopped = False

    # -- public API -------------------------------------------------------------------------

    def start(self) -> None:
        """Record every module called at top level until ``stop()``."""
        self._check_open()
        self._thread = threading.get_ident()
        self._watch_all = True
        self._watch_registrations()
        self._install_global_watch()

    def track(self, module: M, *, max_depth: int | None = None) -> M:
        """Record calls of ``module`` (and its submodules down to ``max_depth``); returns it."""
        from torch import nn

        self._check_open()
        if not isinstance(module, nn.Module):
            raise TypeError(f"track() takes a torch.nn.Module, got {type(module).__qualname__}")
        depth = self.max_depth if max_depth is None else max_depth
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
            raise ValueError(f"max_depth must be an int >= 0, got {max_depth!r}")
        if self._thread is None:
            self._thread = threading.get_ident()
        self._watch_registrations()
        self._tracked[id(module)] = (module, depth)
        if not is_scripted(module):
            self._ensure_hooked(module)  # its own pre-hook opens its calls as roots
        elif self._scripted_watch is None:
            self._scripted_watch = self._register_global_pre(self._watch_tracked_scripted)
        return module

    @contextlib.contextmanager
    def recording(self, *, all_roots: bool) -> Iterator[None]:
        """Record during a block (a test's call); every hook is gone when it ends."""
        with warnings.catch_warnings():
            # torch.compile warns whenever a global module hook exists; the watch hook is
            # meant to see compiled modules, so that warning is not the user's concern.
            warnings.filterwarnings("ignore", message=_COMPILE_HOOK_WARNING)
            if all_roots:
                self.start()
            try:
                yield
            finally:
                self.stop()

    def stop(self) -> None:
        """Remove every hook. Idempotent; a root still running is dropped."""
        self._stopped = True
        self._remove_global_watch()
        for handle in self._registration_watch:
            handle.remove()
        self._registration_watch.clear()
        if self._scripted_watch is not None:
            self._scripted_watch.remove()
            self._scripted_watch = None
        self._close_root()
        for _, handles in self._hooked.values():
            for handle in handles:
                handle.remove()
        self._hooked.clear()
        self._tracked.clear()
        self._stack.clear()

    @property
    def errors(self) -> tuple[str, ...]:
        """Problems met while recording (undescribable inputs, internal errors)."""
        return tuple(self._errors)

    def workloads(self) -> TestWorkloads:
        """The workloads recorded so far, parents before children, in order of first call."""
        entries = sorted(self._entries.values(), key=lambda e: e.done.order)
        position = {e.row: i for i, e in enumerate(entries)}
        return TestWorkloads(self.nodeid, tuple(self._workload(e, position) for e in entries))

    def __iter__(self) -> Iterator[Workload]:
        return iter(self.workloads())

    def __len__(self) -> int:
        return len(self._entries)

    # -- hook registration ------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._stopped:
            raise RuntimeError(f"recording for {self.nodeid} has ended")

    @staticmethod
    def _register_global_pre(hook: Any) -> RemovableHandle:
        from torch.nn.modules.module import register_module_forward_pre_hook

        return register_module_forward_pre_hook(hook)

    def _install_global_watch(self) -> None:
        if self._global_watch is None and self._watch_all and not self._stopped:
            self._global_watch = self._register_global_pre(self._watch_global)

    def _remove_global_watch(self) -> None:
        if self._global_watch is not None:
            self._global_watch.remove()
            self._global_watch = None

    def _watch_registrations(self) -> None:
        """Forget what was read from module trees whenever a submodule or a parameter is
        registered anywhere (a head replaced, a block re-parameterised), so the next call
        reads its structure and submodules afresh; a hot path that re-walked every tree on
        every call would cost far more. Buffers are left out: models reassign them in
        forward, and a buffer that changes shape between calls is not seen."""
        if self._registration_watch:
            return
        from torch.nn.modules import module as torch_module

        registrars = (
            getattr(torch_module, f"register_module_{kind}_registration_hook", None)
            for kind in ("module", "parameter")
        )
        self._registration_watch = [r(self._forget_trees) for r in registrars if r is not None]

    def _forget_trees(self, *_: Any) -> None:
        self._known.clear()
        self._plans.clear()
        self._first_owner.clear()

    def _ensure_hooked(self, module: nn.Module) -> None:
        if id(module) in self._hooked:
            return
        self._hooked[id(module)] = (
            module,
            [
                module.register_forward_pre_hook(self._enter, with_kwargs=True),
                module.register_forward_hook(self._done, with_kwargs=True),
                module.register_forward_hook(self._exit, with_kwargs=True, always_call=True),
            ],
        )

    def _plan_for(self, module: nn.Module, max_depth: int) -> _Plan:
        cached = self._plans.get((id(module), max_depth))
        if cached is not None and cached[0] is module:
            return cached[1]
        target = unwrap(module)
        plan = _Plan(target, is_scripted(module), max_depth, {id(module): (module, "", 0, target)})
        if not plan.scripted and not is_compiled(module):
            for sub, path, depth in self._subtree(target, max_depth):
                plan.members[id(sub)] = (sub, path, depth, unwrap(sub))
        self._plans[(id(module), max_depth)] = (module, plan)
        return plan

    @staticmethod
    def _subtree(target: nn.Module, max_depth: int) -> list[tuple[nn.Module, str, int]]:
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

    # -- hooks: these run inside the model's forward and must never raise ------------------

    def _on_thread(self) -> bool:
        return threading.get_ident() == self._thread

    def _watch_global(self, module: nn.Module, args: tuple[Any, ...]) -> None:
        # A hooked module's own pre-hook opens its call, with its keyword arguments.
        if not self._stack and id(module) not in self._hooked and self._on_thread():
            self._guarded(self._open_root, module, args, None, self.max_depth)

    def _watch_tracked_scripted(self, module: nn.Module, args: tuple[Any, ...]) -> None:
        if not self._stack and id(module) in self._tracked and self._on_thread():
            self._guarded(self._open_root, module, args, None, self._tracked[id(module)][1])

    def _enter(self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if not self._on_thread():
            return
        if self._stack:
            if self._plan is not None and id(module) in self._plan.members:
                self._guarded(self._push_sub, module, args, kwargs)
            return
        tracked = self._tracked.get(id(module))
        if tracked is not None or self._watch_all:
            depth = self.max_depth if tracked is None else tracked[1]
            self._guarded(self._open_root, module, args, kwargs, depth)

    def _done(
        self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any
    ) -> None:
        if self._stack and self._stack[-1].module is module and self._on_thread():
            self._guarded(self._complete, self._stack[-1], args, kwargs, result)

    def _exit(self, module: nn.Module, *_: Any) -> None:
        if self._stack and self._stack[-1].module is module and self._on_thread():
            self._guarded(self._pop)

    def _guarded(self, fn: Any, *args: Any) -> None:
        try:
            fn(*args)
        except Exception:
            self._error("internal error while recording:\n" + traceback.format_exc())

    def _error(self, message: str) -> None:
        if message not in self._errors:
            self._errors.append(message)

    # -- frames -----------------------------------------------------------------------------

    def _now(self) -> int:
        return time.perf_counter_ns() if self.timing else 0

    def _describe_into(
        self, frame: _Frame, args: tuple[Any, ...] | None, kwargs: dict[str, Any] | None
    ) -> None:
        try:
            if args is not None:
                frame.args = describe_args(args, self._describe)
            if kwargs is not None:
                frame.kwargs = describe_kwargs(kwargs, self._describe)
        except UndescribableInputError as exc:
            frame.record = False
            name, location = self._call_site(frame) if frame.depth == 0 else (frame.name, None)
            where = f" called at {location}" if location else ""
            self._error(f"{name} ({class_name(frame.target)}){where}: {exc}")

    def _open_root(
        self,
        module: nn.Module,
        args: tuple[Any, ...],
        kwargs: dict[str, Any] | None,
        max_depth: int,
    ) -> None:
        plan = self._plan_for(module, max_depth)
        frame = _Frame(module, plan.target, "", 0, True, next(self._order))
        self._describe_into(frame, args, kwargs)
        self._remove_global_watch()
        if plan.scripted:
            from torch.nn.modules.module import register_module_forward_hook

            self._script_hooks = [
                register_module_forward_hook(self._done, with_kwargs=True),
                register_module_forward_hook(self._exit, always_call=True),
            ]
        else:
            for member, _, _, _ in plan.members.values():
                self._ensure_hooked(member)
        self._plan = plan
        self._stack.append(frame)
        frame.start_ns = self._now()

    def _push_sub(self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        assert self._plan is not None
        _, path, static_depth, target = self._plan.members[id(module)]
        parent = self._stack[-1]
        depth = max(static_depth, parent.depth + 1)
        frame = _Frame(
            module,
            target,
            path or type(module).__name__,
            depth,
            parent.record and depth <= self._plan.max_depth,
            next(self._order),
        )
        if frame.record:
            self._describe_into(frame, args, kwargs)
        self._stack.append(frame)
        frame.start_ns = self._now()

    def _complete(
        self, frame: _Frame, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any
    ) -> None:
        elapsed = self._now() - frame.start_ns
        if frame.kwargs is None and frame.record:
            self._describe_into(frame, None, kwargs)
        if not frame.record or frame.args is None or frame.kwargs is None:
            return
        static = self._static(frame, args, kwargs, result)
        name, location, call = frame.name, None, None
        if frame.depth == 0 and _entry_key(None, static, 0, "") not in self._entries:
            name, location = self._call_site(frame)
            call = (frame.module, args, kwargs)
        frame.done = _Done(
            static, name, location, frame.depth, elapsed, frame.order, frame.children
        )
        frame.done.call = call
        if self._keyer is not None:
            frame.done.user_key = self._user_key(frame, args, kwargs)

    def _user_key(self, frame: _Frame, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Json:
        assert self._keyer is not None and frame.done is not None
        try:
            key = self._keyer(frame.module, args, kwargs)
            canonical_json(key)
        except Exception as exc:
            self._error(f"pytest_workload_key failed for {frame.done.name}: {exc!r}")
            return None
        return key

    def _pop(self) -> None:
        frame = self._stack.pop()
        if frame.done is not None:
            if self._stack:
                self._stack[-1].children.append(frame.done)
            else:
                self._add(None, frame.done)
        if not self._stack:
            self._close_root()
            self._install_global_watch()

    def _close_root(self) -> None:
        for handle in self._script_hooks:
            handle.remove()
        self._script_hooks = []
        self._plan = None

    def _add(self, caller: _Entry | None, done: _Done) -> None:
        key = _entry_key(caller, done.static, done.depth, done.name)
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = _Entry(done, caller, len(self._entries))
        entry.calls += 1
        entry.total_ns += done.elapsed_ns
        entry.untimed |= not _clock_times(done.static.device)
        if self.timing:
            entry.samples_ns.append(done.elapsed_ns)
        if done.user_key is not None:
            seen = entry.user_keys.setdefault(
                canonical_json(done.user_key), [done.user_key, entry.calls, 0]
            )
            seen[2] += 1
        for child in done.children:
            self._add(entry, child)

    def _static(
        self, frame: _Frame, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any
    ) -> _Static:
        """What a call's workload is, computed when (module, mode, parameter dtype, device,
        inputs) is new; the structure is read afresh then, so ``model.half()`` between calls
        counts."""
        target, fast_key = frame.target, repr((frame.args, frame.kwargs))
        first = self._first_parameter(target)
        # a module without parameters runs where its inputs are
        device = device_of(target, args, kwargs) if first is None else first.device
        dtype = None if first is None else first.dtype
        key = (id(target), target.training, dtype, device, fast_key)
        static = self._known.get(key)
        if static is not None and static.target is target:
            return static
        assert frame.args is not None and frame.kwargs is not None
        signature = InputSignature(frame.args, frame.kwargs)
        memo: StructureMemo = {}
        structure = self.scheme.structure_hash(target, memo)
        static = _Static(
            target=target,
            signature=signature,
            fast_key=fast_key,
            structure_hash=structure,
            structure_hash_without_dtypes=structure_hash_without_dtypes(target),
            hash=self.scheme.workload_hash(structure, signature),
            class_name=class_name(target),
            params=param_stats(target),
            arg_names=_arg_names(target),
            submodules=child_structure_hashes(target, memo, self.scheme.node),
            alternates=tuple(self._alternate(s, target, signature) for s in self._alternates),
            output=self._describe_output(result),
            device=str(device),
        )
        self._known[key] = static
        return static

    def _first_parameter(self, target: nn.Module) -> Parameter | None:
        """``next(target.parameters())`` without walking the tree on every call: where it
        lives is found once, and it is read there afresh (``.half()`` casts it in place, an
        assignment replaces it there)."""
        cached = self._first_owner.get(id(target))
        if cached is None or cached[0] is not target:
            found = (
                (m, name)
                for m in target.modules()
                for name, p in m._parameters.items()
                if p is not None
            )
            owner, name = next(found, (None, ""))
            cached = self._first_owner[id(target)] = (target, owner, name)
        _, owner, name = cached
        if owner is None or name not in owner._parameters:  # (deleted since)
            return None
        return owner._parameters[name]

    def _describe_output(self, result: Any) -> Json:
        try:
            described = describe_args((result,), self._describe)
        except UndescribableInputError:
            return None  # outputs are informative only; an opaque one is not an error
        return described[0]

    @staticmethod
    def _alternate(
        scheme: FingerprintScheme, target: nn.Module, sig: InputSignature
    ) -> AlternateHash:
        structure = scheme.structure_hash(target)
        return AlternateHash(scheme.version, structure, scheme.workload_hash(structure, sig))

    # -- call sites -------------------------------------------------------------------------

    def _call_site(self, frame: _Frame) -> tuple[str, str | None]:
        """Name and location of the code that called a root: the first frame, walking out
        from this hook, that is neither torch's nor this package's. Only looked up for new
        workloads and errors, never on the repeated-call path."""
        fallback = type(frame.target).__name__
        caller = inspect.currentframe()
        while caller is not None and _is_internal(caller.f_code.co_filename):
            caller = caller.f_back
        if caller is None:
            return fallback, None
        name = next(
            (k for k, v in caller.f_locals.items() if v is frame.module and k != "self"),
            fallback,
        )
        filename = os.path.abspath(caller.f_code.co_filename)
        if self._rootdir is not None and filename.startswith(self._rootdir + os.sep):
            filename = os.path.relpath(filename, self._rootdir)
        return name, f"{filename}:{caller.f_lineno}"

    def measure(self, policy: TimingPolicy | None) -> list[str]:
        """Replay each new top-level workload once recording has ended (FLOPs, and timing
        unless ``policy`` is None); returns what could not be measured."""
        if not self._stopped:
            raise RuntimeError("measure() replays calls, so recording must have ended")
        problems = []
        for entry in self._entries.values():
            call, entry.done.call = entry.done.call, None
            if call is None or entry.caller is not None:
                continue
            module, args, kwargs = call
            bound = None if policy is None else policy.for_workload(entry.done.static.hash)
            entry.measurement = replay(module, entry.done.static.target, args, kwargs, bound)
            if entry.measurement.problem is not None:
                problems.append(
                    f"{entry.done.name} ({entry.done.static.class_name}): "
                    f"{entry.measurement.problem}"
                )
        return problems

    def _timing(self, entry: _Entry) -> Timing | None:
        if entry.measurement is not None:
            return entry.measurement.timing
        if entry.caller is None or entry.untimed or not entry.samples_ns:
            return None
        samples = [ns / 1e9 for ns in entry.samples_ns]
        return summarize(samples, entry.done.static.device, "recorded calls")

    def _workload(self, entry: _Entry, position: dict[int, int]) -> Workload:
        done, static, caller = entry.done, entry.done.static, entry.caller
        measured = entry.measurement or Measurement()
        return Workload(
            name=done.name,
            class_name=static.class_name,
            depth=done.depth,
            parent=None if caller is None else caller.done.static.hash,
            structure_hash=static.structure_hash,
            structure_hash_without_dtypes=static.structure_hash_without_dtypes,
            input_signature=done.static.signature,
            hash=static.hash,
            calls=entry.calls,
            params=static.params,
            arg_names=static.arg_names,
            location=done.location,
            total_time_s=entry.total_ns / 1e9 if self.timing and not entry.untimed else None,
            submodules=static.submodules,
            user_keys=tuple(UserKey(k, first, n) for k, first, n in entry.user_keys.values()),
            alternates=static.alternates,
            timing=self._timing(entry),
            flops=measured.flops,
            peak_memory_bytes=measured.peak_memory_bytes,
            output_signature=static.output,
            caller=None if caller is None else position[caller.row],
        )
