"""The call stack: one frame per recorded module call in progress, and a new root's call site.

A frame is opened by a pre-hook, completed by a forward hook (which describes the call and
its identity) and popped by an always-called forward hook, so a call that raises is popped
uncompleted: it is not recorded, nor are the calls it made. A completed root goes into the
row table with its completed children.
"""

from __future__ import annotations

import inspect
import itertools
import sys
import time
import traceback
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any

from .._compile.observe import CallObservation, CompileWatch
from .._core.errors import UndescribableInputError
from .._core.frames import is_user_frame, site, user_frame
from .._core.strict_json import MAX_INPUT_DEPTH, Json, canonical_json, out_of_bounds
from .._fingerprint.describe import Describer, describe_args, describe_kwargs, inputs_key
from .._fingerprint.structure import class_name
from .._perf import FirstCall
from .._workload.computation import Computation
from .identity import Identity, IdentityCache
from .plan import Plan, RootTrace, untraced
from .rows import Call, Entry, RowTable
from .states import Life, State

if TYPE_CHECKING:
    from types import FrameType

    from torch import nn

    from .._compile.health import CompileHealth

#: A user's own key function for a call: ``(module, args, kwargs) -> JSON or None``.
Keyer = Callable[["nn.Module", tuple[Any, ...], dict[str, Any]], Json]
#: A call's positional and keyword arguments.
Arguments = tuple[tuple[Any, ...], dict[str, Any]]
#: A settled root's call, with its row and the row's life as it settled, its identity, raw
#: inputs (``inputs_key``) and plan.
Settled = tuple[Call, Entry, Life, Identity, Hashable, Plan]


class CallStack:
    """The calls in progress, under the plan of the running root."""

    def __init__(
        self,
        identities: IdentityCache,
        rows: RowTable,
        *,
        keyer: Keyer | None,
        rootdir: str | None,
        copies: bool,
    ) -> None:
        self._identities = identities
        self._copies = copies
        self._rows = rows
        #: the recorder's own problems, distinct, in order: never raised into the forward
        self.errors: dict[str, None] = {}
        self._keyer = keyer
        self._rootdir = rootdir
        #: the calls in progress, innermost last (read by the hooks on every call)
        self.frames: list[Call] = []
        # (untimed: ``int()``, a C call that returns 0)
        self._clock: Callable[[], int] = time.perf_counter_ns if rows.timing else int
        # the descriptions of the inputs seen, by their key (``describe.inputs_key``)
        self._seen: dict[Hashable, tuple[tuple[Any, Any], str]] = {}
        # each settled root's call by its module's id (which its frame keeps standing)
        self._settled: dict[int, Settled] = {}
        self._order = itertools.count()
        self.plan: Plan | None = None
        self._trace: RootTrace | None = None
        self._compiles = CompileWatch(self._rootdir)
        # the running root's call of a compiled module, observed
        self._compile: CallObservation | None = None

    def internal_error(self) -> None:
        """Log the exception being handled: the recorder failed (never the model)."""
        self.errors["internal error while recording:\n" + traceback.format_exc()] = None

    def clear(self) -> None:
        """Drop the running root, if any."""
        self._end_trace()
        self._end_compile()
        for frame in self.frames:
            if frame.first is not None:
                frame.first.end(returned=False)
        self.frames.clear()
        self._settled.clear()
        self.plan = None
        self._identities.root_ended()

    def _end_compile(self) -> CompileHealth | None:
        observation, self._compile = self._compile, None
        return None if observation is None else observation.end()

    def _end_trace(self) -> Computation | None:
        trace, self._trace = self._trace, None
        return None if trace is None else trace.end()

    def open_root(
        self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], max_depth: int
    ) -> Sequence[nn.Module]:
        """Open a root's call; the modules that hold the call hooks while it runs (a settled
        root's own alone, so that a call of it within it is told from its own end)."""
        plan = self._identities.plan(module, max_depth)
        frame = self._root_call(module, inputs_key(args, kwargs), (args, kwargs), plan)
        self.plan = plan
        self.frames.append(frame)
        if plan.compiled:
            try:
                self._compile = self._compiles.begin(module)
            except Exception:
                self.internal_error()
        frame.start_ns = self._clock()
        return (module,) if frame.settled else plan.modules

    def reopen(
        self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], max_depth: int
    ) -> bool:
        """The hot path: reopen the frame of the call that settled this root when this call is
        one more of it (safe: a root opens with no call in progress, and its row keeps nothing
        of the frame); :meth:`close_settled` ends it. Nothing is described, looked up or built."""
        found = self._settled.get(id(module))
        if found is None:
            return False
        frame, entry, life, identity, raw, plan = found
        if (
            plan.max_depth != max_depth
            or frame.generation != self._identities.generation
            or entry.life is not life  # (any event since it settled: a life is never changed)
            or raw != inputs_key(args, kwargs)
            or self._identities.key(frame.target, identity.key[-1], (args, kwargs)) != identity.key
            or not identity.watch.unchanged()
        ):
            return False
        frame.ambient = sys.exc_info()[1]
        self.plan = plan
        self.frames.append(frame)
        frame.start_ns = self._clock()
        return True

    def close_settled(self, returned: bool) -> None:
        """End a reopened call, counted if it returned and its tree did not change meanwhile."""
        frame = self.frames.pop()
        frame.elapsed_ns = self._clock() - frame.start_ns
        if returned and frame.generation == self._identities.generation:
            self._rows.count_settled(frame)
        else:  # (calls of it within it, made before it raised, are not kept)
            frame.children.clear()

    def _root_call(self, module: nn.Module, raw: Hashable, call: Arguments, plan: Plan) -> Call:
        frame = Call(module, plan.target, "", 0, True, next(self._order))
        frame.ambient = sys.exc_info()[1]
        self._describe_into(frame, raw, call)
        new = traced = False
        if frame.inputs is not None:  # (recorded)
            # its workload may be known already (a cheap look-up); if not, the call is traced
            frame.identity = self._identities.known(frame.target, frame.inputs[1], call)
            frame.generation = self._identities.generation
            if frame.identity is not None:
                frame.entry = self._rows.root(frame.identity)
            new = frame.entry is None
            traced = frame.entry is None or frame.entry.life.traces(plan.opaque is not None)
        if traced:
            frame.entry = None  # (a traced call is filed with its operations, as a new one)
            try:  # (apart: a call that cannot be observed is still recorded, and not measured)
                if new:  # (its inputs are copied before tracing begins)
                    frame.first = FirstCall(module, frame.target, *call, copy=self._copies)
                self._trace = trace = RootTrace(module, plan, call, self._rootdir)
                frame.span = trace.opaque is None
                if frame.first is not None:
                    frame.first.counts = trace.counts
            except Exception:
                self.internal_error()
        elif self._keyer is None and frame.entry and frame.entry.life.state is State.SETTLED:
            # (not with a key hook: it keys every call, its submodules' too)
            frame.settled = True
            if raw is not None and not plan.compiled and frame.identity is not None:
                found = (frame, frame.entry, frame.entry.life, frame.identity, raw, plan)
                self._settled[id(module)] = found
        return frame

    def push_sub(self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        assert self.plan is not None
        _, path, static_depth, target = self.plan.members[id(module)]
        parent = self.frames[-1]
        depth = max(static_depth, parent.depth + 1)
        record = parent.record and depth <= self.plan.max_depth
        name = path or type(module).__name__
        frame = Call(module, target, name, depth, record, next(self._order))
        frame.ambient = sys.exc_info()[1]
        if frame.record:
            self._describe_into(frame, inputs_key(args, kwargs), (args, kwargs))
        self.frames.append(frame)
        if self._trace is not None:
            frame.span = frame.record and self._trace.open_span(path)
        frame.start_ns = self._clock()

    def complete(
        self, frame: Call, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any
    ) -> None:
        frame.elapsed_ns = self._clock() - frame.start_ns
        if self._compile is not None and frame is self.frames[0]:
            frame.compile_health = self._end_compile()
        if frame.settled and frame.generation == self._identities.generation:
            self._rows.count_settled(frame)  # (else its tree changed while it ran: read afresh)
            return
        trace = self._trace
        if trace is None:  # (untraced calls are the hot path)
            self._complete(frame, args, kwargs, result)
            return
        with untraced():
            if frame is self.frames[0]:
                frame.computation = self._end_trace()
            elif frame.span:
                frame.computation = trace.close_span(frame.name)
                frame.span = False
            self._complete(frame, args, kwargs, result)
        if frame.done:
            frame.traced, frame.building = True, trace.building
            frame.compute_unknown = trace.unknown
            if frame.building or frame.compute_unknown:
                frame.computation = None

    def _complete(
        self, frame: Call, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any
    ) -> None:
        if frame.first is not None:
            frame.first.end(returned=True)
        if frame.inputs is None:  # (not recorded)
            return
        identity = frame.identity
        if identity is None or frame.generation != self._identities.generation:
            call = (args, kwargs)
            identity = self._identities.identity(frame.target, *frame.inputs, call, result)
        elif frame.entry is not None:
            # a known root's untraced call: counted into its row (the repeated-call path)
            keyed = (frame.module, args, kwargs)
            frame.user_key = _user_key(self._keyer, self.errors, frame.entry.done.name, keyed)
            self._rows.observe(frame.entry, frame)
            return
        frame.done, frame.identity, frame.ambient = True, identity, None
        new = frame.depth == 0 and self._rows.root(identity) is None
        if new:
            frame.name, frame.location = call_site(frame.module, frame.target, self._rootdir)
        if not new or frame.first is None or frame.first.context is None:
            frame.first = None  # (kept for a new top-level workload only)
        keyed = (frame.module, args, kwargs)
        frame.user_key = _user_key(self._keyer, self.errors, frame.name, keyed)

    def pop(self) -> bool:
        """Close the innermost call; True when that ended the root."""
        frame = self.frames.pop()
        if self._trace is not None:
            if frame.span:  # (the call raised: its operations stay its caller's)
                with untraced():
                    self._trace.close_span(None)
            if not self.frames:
                self._end_trace()
        if not self.frames and self._compile is not None:
            self._end_compile()  # (the call raised)
        if frame.first is not None:
            frame.first.end(returned=False)  # (unless it returned: then it has ended)
        if frame.done:
            if self.frames:
                self.frames[-1].children.append(frame)
            else:
                self._rows.add(None, frame)
        if self.frames:
            return False
        self.plan = None
        if self._identities.read:
            self._identities.root_ended()
        return True

    def _describe_into(self, frame: Call, raw: Hashable, call: Arguments) -> None:
        """Describe a call's inputs and key them (``raw``: their ``inputs_key``)."""
        try:
            frame.inputs = _described(self._seen, raw, call, self._identities.describe)
        except UndescribableInputError as exc:
            frame.record = False
            name, location = frame.name, None
            if frame.depth == 0:
                name, location = call_site(frame.module, frame.target, self._rootdir)
            where = f" called at {location}" if location else ""
            self.errors[f"{name} ({class_name(frame.target)}){where}: {exc}"] = None


def _described(
    seen: dict[Hashable, tuple[tuple[Any, Any], str]],
    raw: Hashable,
    call: Arguments,
    describe: Describer | None,
) -> tuple[tuple[Any, Any], str]:
    """A call's inputs described, and their key; inputs seen before (``raw``: their
    ``inputs_key``, kept in ``seen``) are not described again."""
    found = None if raw is None else seen.get(raw)
    if found is not None:
        return found
    args, kwargs = call
    with untraced():  # (a subclass's input reads the same in any call)
        described = (describe_args(args, describe), describe_kwargs(kwargs, describe))
    # repr, not JSON: a process-local key that still tells True, 1 and 1.0 apart (rows are
    # told apart by the signature's canonical form), computed once per distinct raw inputs
    found = (described, repr(described))
    if raw is not None:
        seen[raw] = found
    return found


def _user_key(
    keyer: Keyer | None,
    errors: dict[str, None],
    name: str,
    call: tuple[nn.Module, tuple[Any, ...], dict[str, Any]],
) -> Json:
    """The key hook's key for a call, checked (None where there is no key hook, and, with an
    error logged, where it failed)."""
    if keyer is None:
        return None
    try:
        key = keyer(*call)
        canonical_json(key)
    except (Exception, SystemExit) as exc:  # a hook's sys.exit() is its own failure
        errors[f"pytest_workload_key failed for {name}: {exc!r}"] = None
        return None
    refused = out_of_bounds(key, MAX_INPUT_DEPTH)
    if refused is not None:
        errors[f"pytest_workload_key returned {refused} for {name}"] = None
        return None
    return key


def call_site(module: nn.Module, target: nn.Module, rootdir: str | None) -> tuple[str, str | None]:
    """Name and location of the code that called a root (docs/explanation/recording.md,
    "Which calls become workloads"): the first frame, walking out from this hook, that is
    neither torch's nor this package's. Only looked up for new workloads and errors, never on
    the repeated-call path."""
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
