"""The call stack: one frame per recorded module call in progress.

A frame is opened by a pre-hook, completed by a forward hook (which describes the call and
its identity) and popped by an always-called forward hook, so a call that raises is popped
uncompleted: it is not recorded, nor are the calls it made. A completed root goes into the
row table with its completed children.
"""

from __future__ import annotations

import itertools
import sys
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._core.errors import UndescribableInputError
from .._core.strict_json import Json, canonical_json, out_of_bounds
from .._fingerprint.describe import Describer, describe_args, describe_kwargs, inputs_key
from .._fingerprint.structure import class_name
from .._perf import FirstCall
from .._workload.computation import Computation
from .callsite import call_site
from .error_log import ErrorLog
from .identity import Identity, IdentityCache
from .plan import Plan
from .rows import Done, Entry, RowTable
from .states import State
from .traced import RootTrace, untraced

if TYPE_CHECKING:
    from torch import nn

#: A user's own key function for a call: ``(module, args, kwargs) -> JSON or None``.
Keyer = Callable[["nn.Module", tuple[Any, ...], dict[str, Any]], Json]


def _untimed() -> int:
    return 0


#: A call's described positional and keyword arguments.
_Described = tuple[tuple[Json, ...], tuple[tuple[str, Json], ...]]


@dataclass(slots=True)
class Frame:
    module: nn.Module
    target: nn.Module
    name: str
    depth: int
    record: bool
    order: int
    args: tuple[Json, ...] | None = None
    kwargs: tuple[tuple[str, Json], ...] | None = None
    start_ns: int = 0
    first: FirstCall | None = None
    # whether this call's operations go into a span of its own (its root is traced)
    span: bool = False
    computation: Computation | None = None
    done: Done | None = None
    children: list[Done] = field(default_factory=list)
    # a root's identity when its inputs were seen before, looked up once as the call opens,
    # valid while the identity cache's generation stays the same
    identity: Identity | None = None
    generation: int = 0
    # the process-local key of its described inputs, once both args and kwargs are
    key: str | None = None
    # a root's row when its workload has one already, looked up as the call opens
    entry: Entry | None = None
    # the exception being handled where the call began (another one as it ends: it raised)
    ambient: BaseException | None = None
    # a settled root's call: its submodules run unhooked (see states.OBSERVED_CALLS)
    settled: bool = False


class CallStack:
    """Frames of the calls in progress, under the plan of the running root."""

    def __init__(
        self,
        identities: IdentityCache,
        rows: RowTable,
        errors: ErrorLog,
        *,
        describe: Describer | None,
        keyer: Keyer | None,
        rootdir: Path | None,
        copies: bool = True,
    ) -> None:
        self._identities = identities
        self._copies = copies
        self._rows = rows
        self._errors = errors
        self._describe = describe
        self._keyer = keyer
        self._rootdir = str(rootdir) if rootdir is not None else None
        #: the calls in progress, innermost last (read by the hooks on every call)
        self.frames: list[Frame] = []
        self._clock: Callable[[], int] = time.perf_counter_ns if rows.timing else _untimed
        # the descriptions of the inputs seen, by their key (``describe.inputs_key``)
        self._seen: dict[Hashable, tuple[_Described, str]] = {}
        self._order = itertools.count()
        self.plan: Plan | None = None
        self._trace: RootTrace | None = None

    def clear(self) -> None:
        """Drop the running root, if any."""
        self._end_trace()
        for frame in self.frames:
            if frame.first is not None:
                frame.first.end(returned=False)
        self.frames.clear()
        self.plan = None
        self._identities.root_ended()

    def _end_trace(self) -> Computation | None:
        trace, self._trace = self._trace, None
        return None if trace is None else trace.end()

    def open_root(
        self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], plan: Plan
    ) -> None:
        frame = Frame(module, plan.target, "", 0, True, next(self._order))
        frame.ambient = sys.exc_info()[1]
        self._describe_into(frame, args, kwargs)
        new = traced = False
        if frame.record:
            # its workload may be known already (a cheap look-up); if not, the call is traced
            if frame.key is not None:
                frame.identity = self._identities.known(frame.target, frame.key, (args, kwargs))
                frame.generation = self._identities.generation
            if frame.identity is not None:
                frame.entry = self._rows.root(frame.identity)
            new = frame.entry is None
            traced = frame.entry is None or frame.entry.life.traces(plan.opaque is not None)
        if traced:
            frame.entry = None  # (a traced call is filed with its operations, as a Done)
            self._errors.guarded(self._begin_trace, frame, args, kwargs, plan, new)
        elif (
            frame.entry is not None
            and frame.entry.life.state is State.SETTLED
            and self._keyer is None
        ):
            # (with a key hook every call is keyed, its submodules' too)
            frame.settled = True
        self.plan = plan
        self.frames.append(frame)
        frame.start_ns = self._clock()

    def _begin_trace(
        self,
        frame: Frame,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        plan: Plan,
        first: bool,
    ) -> None:
        # guarded apart: a call that cannot be observed is still recorded (and not measured)
        trace = RootTrace(frame.module, plan)
        if first:  # (its inputs are copied before tracing begins)
            frame.first = FirstCall(frame.target, args, kwargs, copy=self._copies)
        trace.start(frame.target, (args, kwargs))
        self._trace = trace
        frame.span = trace.traces_ops
        if frame.first is not None:
            frame.first.counts = trace.counts

    def push_sub(self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        assert self.plan is not None
        _, path, static_depth, target = self.plan.members[id(module)]
        parent = self.frames[-1]
        depth = max(static_depth, parent.depth + 1)
        frame = Frame(
            module,
            target,
            path or type(module).__name__,
            depth,
            parent.record and depth <= self.plan.max_depth,
            next(self._order),
        )
        frame.ambient = sys.exc_info()[1]
        self._push(frame, args, kwargs)
        if self._trace is not None:
            frame.span = frame.record and self._trace.open_span(path)
        frame.start_ns = self._clock()

    def _push(self, frame: Frame, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if frame.record:
            self._describe_into(frame, args, kwargs)
        self.frames.append(frame)

    def complete(
        self, frame: Frame, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any
    ) -> None:
        elapsed = self._clock() - frame.start_ns
        trace = self._trace
        if trace is None:  # (untraced calls are the hot path)
            self._complete(frame, args, kwargs, result, elapsed)
            return
        with untraced():
            if frame is self.frames[0]:
                frame.computation = self._end_trace()
            elif frame.span:
                frame.computation = trace.close_span(frame.name)
                frame.span = False
            self._complete(frame, args, kwargs, result, elapsed)
        if frame.done is not None:
            frame.done.traced = True
            unknown = trace.unknown
            frame.done.computation = None if trace.building or unknown else frame.computation
            frame.done.compute_unknown = unknown
            frame.done.building = trace.building

    def _complete(
        self, frame: Frame, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any, elapsed: int
    ) -> None:
        if frame.first is not None:
            frame.first.end(returned=True)
        if not frame.record or frame.args is None or frame.kwargs is None or frame.key is None:
            return
        identity = frame.identity
        if identity is None or frame.generation != self._identities.generation:
            described = (frame.args, frame.kwargs)
            identity = self._identities.identity(
                frame.target, described, frame.key, (args, kwargs), result
            )
        elif frame.settled:
            assert frame.entry is not None
            self._rows.count_settled(frame.entry, identity, elapsed)
            return
        elif frame.entry is not None:
            # a known root's untraced call: counted into its row (the repeated-call path)
            user_key = None
            if self._keyer is not None:
                user_key = self._user_key(frame.entry.done.name, frame.module, args, kwargs)
            self._rows.observe(frame.entry, identity, elapsed, user_key, frame.children)
            return
        name, location, first = frame.name, None, None
        if frame.depth == 0 and self._rows.root(identity) is None:
            name, location = call_site(frame.module, frame.target, self._rootdir)
            if frame.first is not None and frame.first.context is not None:
                first = (frame.module, frame.first)
        frame.done = Done(
            identity, name, location, frame.depth, elapsed, frame.order, frame.children
        )
        frame.done.first = first
        if self._keyer is not None:
            frame.done.user_key = self._user_key(name, frame.module, args, kwargs)

    def pop(self) -> bool:
        """Close the innermost call; True when that ended the root."""
        if self._trace is None:
            frame = self.frames.pop()
        else:
            with untraced():
                frame = self.frames.pop()
                if frame.span:
                    # (the call raised: its operations stay its caller's)
                    self._trace.close_span(None)
            if not self.frames:
                self._end_trace()
        if frame.first is not None:
            frame.first.end(returned=False)  # (the call raised: it is not recorded)
        if frame.done is not None:
            if self.frames:
                self.frames[-1].children.append(frame.done)
            else:
                self._rows.add(None, frame.done)
        if self.frames:
            return False
        self.plan = None
        if self._identities.read:
            self._identities.root_ended()
        return True

    def _describe_into(self, frame: Frame, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Describe a call's inputs and key them; inputs seen before are not described again."""
        raw = inputs_key(args, kwargs)
        seen = None if raw is None else self._seen.get(raw)
        if seen is not None:
            (frame.args, frame.kwargs), frame.key = seen
            return
        try:
            with untraced():  # (a subclass's input reads the same in any call)
                frame.args = describe_args(args, self._describe)
                frame.kwargs = describe_kwargs(kwargs, self._describe)
        except UndescribableInputError as exc:
            frame.record = False
            if frame.depth == 0:
                name, location = call_site(frame.module, frame.target, self._rootdir)
            else:
                name, location = frame.name, None
            where = f" called at {location}" if location else ""
            self._errors.add(f"{name} ({class_name(frame.target)}){where}: {exc}")
            return
        # repr, not JSON: a process-local key that still tells True, 1 and 1.0 apart (rows are
        # told apart by the signature's canonical form), computed once per distinct raw inputs
        frame.key = repr((frame.args, frame.kwargs))
        if raw is not None:
            self._seen[raw] = ((frame.args, frame.kwargs), frame.key)

    def _user_key(
        self, name: str, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Json:
        assert self._keyer is not None
        try:
            key = self._keyer(module, args, kwargs)
            canonical_json(key)
        except (Exception, SystemExit) as exc:  # a hook's sys.exit() is its own failure
            self._errors.add(f"pytest_workload_key failed for {name}: {exc!r}")
            return None
        refused = out_of_bounds(key)
        if refused is not None:
            self._errors.add(f"pytest_workload_key returned {refused} for {name}")
            return None
        return key
