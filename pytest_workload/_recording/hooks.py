"""The hook lifecycle: which torch hooks exist while a test records, and what they call.

A *root* is a module called while no recorded module is running. While no root runs, a
global watch (:class:`~pytest_workload._torch_internals.GlobalWatch`) looks at every call
and opens a root for the calls recorded (every one, or the tracked modules'). Only while a
root runs do it and its submodules down to the depth recorded hold hooks of the recorder's;
they are put in as it opens and taken out as it returns or raises, so between calls the model
is the one the test built. A settled root's submodules get none (see
``states.OBSERVED_CALLS``). While a root runs the watch is out of torch's table: every other
module keeps torch's hook-free fast path.

While the test traces or compiles its model (dynamo, ``torch.jit.trace``, fx, fake tensors)
no root is opened: the watch is the only hook such a tracer meets, and it does nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from threading import get_ident
from typing import TYPE_CHECKING, Any

from .._torch_internals import (
    CallHooks,
    GlobalWatch,
    compiling_check,
    function_mode_check,
    tracing_checks,
)
from .identity import IdentityCache
from .plan import untraced
from .rows import Call
from .stack import CallStack

if TYPE_CHECKING:
    from torch import nn


class Hooks:
    """Puts in and takes out every hook of one recording; the hooks feed ``stack``.

    Hooks run inside the model's forward: each routes its work through :meth:`_run` and
    never raises. Calls from threads other than the one that started recording are ignored.
    """

    def __init__(self, stack: CallStack, identities: IdentityCache, max_depth: int) -> None:
        self._stack = stack
        self._identities = identities
        self._max_depth = max_depth
        self._thread: int | None = None
        self._watch_all = False
        self._tracked: dict[int, tuple[nn.Module, int]] = {}
        self._watch: GlobalWatch | None = None
        self._calls: CallHooks | None = None
        # the running root's modules whose hooks are in
        self._hooked: Sequence[nn.Module] = ()
        self._compiling = compiling_check()
        self._tracing = tracing_checks()
        # whether a function mode is on (the test's, or the tracer's), which would see the
        # recorder's own reads of tensors
        self._function_mode = function_mode_check()

    def track(self, module: nn.Module | None, max_depth: int) -> None:
        """Open a root for calls of ``module`` (None: of every module called at top level)."""
        if module is None or self._thread is None:
            self._thread = get_ident()
        if module is None:
            self._watch_all = True
        else:
            self._tracked[id(module)] = (module, max_depth)
        if self._watch is not None:
            return
        self._identities.watch()
        self._watch = GlobalWatch(self._watch_call, self._open_call)
        self._calls = CallHooks(self._enter, self._exit, self._watch.open_key)

    def remove_all(self) -> None:
        """Remove every hook; a root still running is dropped. Idempotent."""
        if self._watch is not None and self._calls is not None:  # (put in together)
            self._watch.remove()
            self._calls.take_out(self._hooked)
            self._calls.take_out_left()
            # (their hooks are bound methods of this object: a cycle that would keep the last
            # model alive until a full collection, whose cost grows with the session's heap)
            self._watch = self._calls = None
        self._identities.unwatch()
        self._hooked = ()
        self._tracked.clear()
        self._stack.clear()

    def _open_root(
        self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], max_depth: int
    ) -> None:
        assert self._watch is not None and self._calls is not None  # (the watch called)
        self._watch.suspend()
        try:
            self._hooked = self._stack.open_root(module, args, kwargs, max_depth)
        finally:
            if not self._stack.frames:  # (it failed before the call was opened)
                self._calls.take_out((module,))  # (the watch's hand-over)
                self._watch.resume()
        self._calls.put_in(self._hooked)

    def _finish(self, frame: Call, args: tuple[Any, ...], kwargs: Any, result: Any) -> None:
        """The call ended: record it if it returned (else it raised), then close it."""
        # torch calls the hook from its exception handler when the forward raised
        returned = sys.exc_info()[1] is frame.ambient
        try:
            if returned:
                self._stack.complete(frame, args, kwargs, result)
        finally:
            if self._stack.pop():
                assert self._calls is not None and self._watch is not None  # (as a root opened)
                self._calls.take_out(self._hooked, None if returned else frame.module)
                self._hooked = ()
                self._watch.resume()

    # -- the hooks themselves ---------------------------------------------------------------

    def _run(self, fn: Callable[..., object], *args: Any) -> None:
        """Run a hook's work, never raising; where a function mode is on (the test's, or the
        tracer's), with torch functions disabled, so that it sees none of the recorder's
        reads."""
        try:
            if self._function_mode():
                with untraced():
                    fn(*args)
            else:
                fn(*args)
        except Exception as exc:
            if not isinstance(exc, TypeError) or not str(exc).startswith("unhashable type"):
                self._stack.internal_error()
                return
            # torch's own walk (named_modules) puts each module in a set
            self._stack.errors[
                f"not recorded: a module class defines __eq__ without __hash__ ({exc}), so "
                "torch cannot walk its submodules; give it `__hash__ = torch.nn.Module.__hash__`"
            ] = None

    def _watch_call(self, module: nn.Module, args: tuple[Any, ...]) -> None:
        if self._compiling():  # (first: dynamo traces the rest away)
            return
        if (
            not self._stack.frames
            and get_ident() == self._thread
            and (self._watch_all or id(module) in self._tracked)
            and not self._tracing()
            and self._watch is not None
        ):
            self._watch.pass_kwargs(module)

    def _open_call(
        self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any] | None = None
    ) -> None:
        if kwargs is None or self._watch is None:  # (the watch did not pass this call on)
            return
        tracked = self._tracked.get(id(module))
        depth = self._max_depth if tracked is None else tracked[1]
        if not self._function_mode():  # (the hot path: a settled root called again)
            try:
                if self._stack.reopen(module, args, kwargs, depth):
                    assert self._calls is not None  # (put in with the watch)
                    self._watch.suspend()
                    self._hooked = (module,)
                    self._calls.put_in(self._hooked, self._settled_exit)
                    return
            except Exception:
                self._stack.internal_error()
        self._run(self._open_root, module, args, kwargs, depth)

    def _enter(self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if self._stack.frames and get_ident() == self._thread:
            self._run(self._stack.push_sub, module, args, kwargs)

    def _settled_exit(
        self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any
    ) -> None:
        """A reopened settled root's forward hook: it counts the call if it returned."""
        frames = self._stack.frames
        if len(frames) != 1 or get_ident() != self._thread:  # (a call of it within it)
            self._exit(module, args, kwargs, result)
            return
        returned = sys.exc_info()[1] is frames[0].ambient
        try:
            self._stack.close_settled(returned)
        except Exception:
            self._stack.internal_error()
        if self._calls is not None and self._watch is not None:
            self._calls.take_out(self._hooked, None if returned else module)
            self._hooked = ()
            self._watch.resume()

    def _exit(
        self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any
    ) -> None:
        """Called as a call returns or raises (then with no result)."""
        frames = self._stack.frames
        if frames and frames[-1].module is module and get_ident() == self._thread:
            self._run(self._finish, frames[-1], args, kwargs, result)
