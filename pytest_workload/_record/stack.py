"""The call stack: one frame per recorded module call in progress.

A frame is opened by a pre-hook, completed by a forward hook (which describes the call and
its identity) and popped by an always-called forward hook, so a call that raises is popped
uncompleted: it is not recorded, nor are the calls it made. A completed root goes into the
row table with its completed children.
"""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._identity.describe import Describer, describe_args, describe_kwargs
from .._identity.structure import class_name
from .._measure.first_call import FirstCall
from .._model.canonical import Json, canonical_json
from .._model.computation import Computation
from .._model.errors import UndescribableInputError
from .callsite import call_site
from .errors import ErrorLog
from .identity import Identity, IdentityCache
from .plan import Plan
from .rows import TRACED_CALLS, Done, RowTable
from .traced import RootTrace

if TYPE_CHECKING:
    from torch import nn

#: A user's own key function for a call: ``(module, args, kwargs) -> JSON or None``.
Keyer = Callable[["nn.Module", tuple[Any, ...], dict[str, Any]], Json]


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
    ) -> None:
        self._identities = identities
        self._rows = rows
        self._errors = errors
        self._describe = describe
        self._keyer = keyer
        self._rootdir = str(rootdir) if rootdir is not None else None
        self._frames: list[Frame] = []
        self._order = itertools.count()
        self.plan: Plan | None = None
        self._trace: RootTrace | None = None

    def __bool__(self) -> bool:
        return bool(self._frames)

    def current(self) -> Frame | None:
        """The innermost call in progress, if any (one look-up for the hooks' hot path)."""
        return self._frames[-1] if self._frames else None

    def clear(self) -> None:
        """Drop the running root, if any."""
        self._end_trace()
        for frame in self._frames:
            if frame.first is not None:
                frame.first.end(None)
        self._frames.clear()
        self.plan = None
        self._identities.root_ended()

    def _end_trace(self) -> Computation | None:
        trace, self._trace = self._trace, None
        return None if trace is None else trace.end()

    def open_root(
        self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any] | None, plan: Plan
    ) -> None:
        frame = Frame(module, plan.target, "", 0, True, next(self._order))
        self._describe_into(frame, args, kwargs)
        traced = TRACED_CALLS
        if frame.record:
            frame.identity = self._known(frame, args, kwargs)
            frame.generation = self._identities.generation
            traced = -1 if frame.identity is None else self._rows.root_traced(frame.identity)
        if traced == -1 or (traced < TRACED_CALLS and plan.opaque is None):
            self._errors.guarded(self._begin_trace, frame, args, kwargs, plan, traced == -1)
        self.plan = plan
        self._frames.append(frame)
        frame.start_ns = self._now()

    def _begin_trace(
        self,
        frame: Frame,
        args: tuple[Any, ...],
        kwargs: dict[str, Any] | None,
        plan: Plan,
        first: bool,
    ) -> None:
        # guarded apart: a call that cannot be observed is still recorded (and not measured)
        trace = RootTrace(frame.module, plan)
        if first:  # (its inputs are copied before tracing begins)
            frame.first = FirstCall(frame.target, args, kwargs)
        trace.start(frame.target, (args, kwargs))
        self._trace = trace
        frame.span = trace.traces_ops
        if frame.first is not None:
            frame.first.counts = trace.counts

    def _known(
        self, frame: Frame, args: tuple[Any, ...], kwargs: dict[str, Any] | None
    ) -> Identity | None:
        """The root's identity if its workload is known already (a cheap look-up); None when
        it may be a new workload, whose calls are traced."""
        if frame.args is None or frame.kwargs is None or kwargs is None:
            return None
        return self._identities.known(frame.target, (frame.args, frame.kwargs), (args, kwargs))

    def push_sub(self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        assert self.plan is not None
        _, path, static_depth, target = self.plan.members[id(module)]
        parent = self._frames[-1]
        depth = max(static_depth, parent.depth + 1)
        frame = Frame(
            module,
            target,
            path or type(module).__name__,
            depth,
            parent.record and depth <= self.plan.max_depth,
            next(self._order),
        )
        if self._trace is None:
            self._push(frame, args, kwargs)
        else:
            with self._paused():
                self._push(frame, args, kwargs)
                frame.span = frame.record and self._trace.open_span()
        frame.start_ns = self._now()

    def _push(self, frame: Frame, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if frame.record:
            self._describe_into(frame, args, kwargs)
        self._frames.append(frame)

    @contextlib.contextmanager
    def _paused(self) -> Iterator[None]:
        """The recorder's own work inside a traced call is not the model's computation (only
        entered when tracing: untraced calls are the hot path)."""
        trace = self._trace
        assert trace is not None
        trace.pause(True)
        try:
            yield
        finally:
            trace.pause(False)

    def complete(
        self, frame: Frame, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any
    ) -> None:
        elapsed = self._now() - frame.start_ns
        trace = self._trace
        if trace is None:  # (untraced calls are the hot path)
            self._complete(frame, args, kwargs, result, elapsed)
            return
        with self._paused():
            if frame is self._frames[0]:
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
            frame.first.end(kwargs)
        if frame.kwargs is None and frame.record:
            self._describe_into(frame, None, kwargs)
        if not frame.record or frame.args is None or frame.kwargs is None:
            return
        identity = frame.identity
        if identity is None or frame.generation != self._identities.generation:
            identity = self._identities.identity(
                frame.target, (frame.args, frame.kwargs), (args, kwargs), result
            )
        name, location, first = frame.name, None, None
        if frame.depth == 0 and not self._rows.has_root(identity):
            name, location = call_site(frame.module, frame.target, self._rootdir)
            if frame.first is not None and frame.first.context is not None:
                first = (frame.module, frame.first)
        frame.done = Done(
            identity, name, location, frame.depth, elapsed, frame.order, frame.children
        )
        frame.done.first = first
        if self._keyer is not None:
            frame.done.user_key = self._user_key(frame, args, kwargs)

    def pop(self) -> bool:
        """Close the innermost call; True when that ended the root."""
        if self._trace is None:
            frame = self._frames.pop()
        else:
            with self._paused():
                frame = self._frames.pop()
                if frame.span:
                    # (the call raised: its operations stay its caller's)
                    self._trace.close_span(None)
            if not self._frames:
                self._end_trace()
        if frame.first is not None:
            frame.first.end(None)  # (the call raised: it is not recorded)
        if frame.done is not None:
            if self._frames:
                self._frames[-1].children.append(frame.done)
            else:
                self._rows.add(None, frame.done)
        if self._frames:
            return False
        self.plan = None
        self._identities.root_ended()
        return True

    def _now(self) -> int:
        return time.perf_counter_ns() if self._rows.timing else 0

    def _describe_into(
        self, frame: Frame, args: tuple[Any, ...] | None, kwargs: dict[str, Any] | None
    ) -> None:
        try:
            if args is not None:
                frame.args = describe_args(args, self._describe)
            if kwargs is not None:
                frame.kwargs = describe_kwargs(kwargs, self._describe)
        except UndescribableInputError as exc:
            frame.record = False
            if frame.depth == 0:
                name, location = call_site(frame.module, frame.target, self._rootdir)
            else:
                name, location = frame.name, None
            where = f" called at {location}" if location else ""
            self._errors.add(f"{name} ({class_name(frame.target)}){where}: {exc}")

    def _user_key(self, frame: Frame, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Json:
        assert self._keyer is not None and frame.done is not None
        try:
            key = self._keyer(frame.module, args, kwargs)
            canonical_json(key)
        except Exception as exc:
            self._errors.add(f"pytest_workload_key failed for {frame.done.name}: {exc!r}")
            return None
        return key
