"""The hook lifecycle: which torch hooks exist while a test records, and what they call.

A *root* is a module called while no recorded module is running. While no root runs, one
global forward pre-hook watches for new roots. A module seen as a root gets hooks of its own,
and so do its submodules down to the depth recorded; they stay until recording ends, so a
repeated call costs two hook calls and no registration. While a root runs, the global hook
is taken out of torch's table: every other module keeps torch's hook-free fast path.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from threading import get_ident
from typing import TYPE_CHECKING, Any

from .._identity.structure import is_scripted
from .detach import Detached
from .errors import ErrorLog
from .identity import IdentityCache
from .stack import CallStack, Frame
from .traced import untraced

if TYPE_CHECKING:
    from torch import nn
    from torch.utils.hooks import RemovableHandle

    from .plan import Plan


def _register_global_pre(hook: Any) -> RemovableHandle:
    from torch.nn.modules.module import register_module_forward_pre_hook

    return register_module_forward_pre_hook(hook)


def _no_function_mode() -> bool:
    return False


class Hooks:
    """Registers and removes every hook of one recording; the hooks feed ``stack``.

    Hooks run inside the model's forward: each routes its work through :meth:`_run` and
    never raises. Calls from threads other than the one that started recording are ignored.
    """

    def __init__(
        self, stack: CallStack, identities: IdentityCache, errors: ErrorLog, max_depth: int
    ) -> None:
        self._stack = stack
        self._identities = identities
        self._errors = errors
        self._max_depth = max_depth
        self._thread: int | None = None
        self._watch_all = False
        self._stopped = False
        self._global_watch: RemovableHandle | None = None
        # torch's table of global pre-hooks, where the watch is taken out while a root runs
        self._global_hooks: dict[int, Any] = {}
        self._tracked: dict[int, tuple[nn.Module, int]] = {}
        self._scripted_watch: RemovableHandle | None = None
        self._hooked: dict[int, tuple[nn.Module, list[RemovableHandle]]] = {}
        # plans whose members all have their hooks (a root's later calls skip the loop), with
        # its submodules and their hooks
        self._hooked_plans: dict[int, tuple[Plan, list[tuple[nn.Module, list[RemovableHandle]]]]]
        self._hooked_plans = {}
        self._detached = Detached()
        self._script_hooks: list[RemovableHandle] = []
        # whether a function mode is on (the test's, or the tracer's), which would see the
        # recorder's own reads of tensors (torch's check, once torch is imported)
        self._function_mode: Callable[[], bool] = _no_function_mode

    def watch_all(self) -> None:
        """Open a root for every module called at top level."""
        self._thread = get_ident()
        self._watch_all = True
        self._watch_modes()
        self._identities.watch()
        self._install_global_watch()

    def track(self, module: nn.Module, max_depth: int) -> None:
        """Open a root for calls of ``module``."""
        if self._thread is None:
            self._thread = get_ident()
        self._watch_modes()
        self._identities.watch()
        self._tracked[id(module)] = (module, max_depth)
        if not is_scripted(module):
            self._ensure_hooked(module)  # its own pre-hook opens its calls as roots
        elif self._scripted_watch is None:
            self._scripted_watch = _register_global_pre(self._watch_tracked_scripted)

    def _watch_modes(self) -> None:
        from torch._C import _is_torch_function_mode_enabled

        self._function_mode = _is_torch_function_mode_enabled

    def remove_all(self) -> None:
        """Remove every hook; a root still running is dropped. Idempotent."""
        self._stopped = True
        self._detached.forget()
        self._remove_global_watch()
        self._identities.unwatch()
        if self._scripted_watch is not None:
            self._scripted_watch.remove()
            self._scripted_watch = None
        self._close_root()
        for _, handles in self._hooked.values():
            for handle in handles:
                handle.remove()
        self._hooked.clear()
        self._hooked_plans.clear()
        self._tracked.clear()
        self._stack.clear()

    # -- registration -----------------------------------------------------------------------

    def _install_global_watch(self) -> None:
        if self._global_watch is None and self._watch_all and not self._stopped:
            self._global_watch = _register_global_pre(self._watch_global)
            table = self._global_watch.hooks_dict_ref()
            assert table is not None  # (torch's module-level table lives as long as torch)
            self._global_hooks = table

    def _suspend_global_watch(self) -> None:
        """While a root runs (registered once; taken out of torch's table and put back, which
        costs a dict operation where registering costs a handle)."""
        if self._global_watch is not None:
            self._global_hooks.pop(self._global_watch.id, None)

    def _resume_global_watch(self) -> None:
        if self._global_watch is not None:
            self._global_hooks[self._global_watch.id] = self._watch_global

    def _remove_global_watch(self) -> None:
        if self._global_watch is not None:
            self._global_watch.remove()
            self._global_watch = None

    def _ensure_hooked(self, module: nn.Module) -> None:
        if id(module) in self._hooked:
            return
        self._hooked[id(module)] = (
            module,
            [
                module.register_forward_pre_hook(self._enter, with_kwargs=True),
                module.register_forward_hook(self._exit, with_kwargs=True, always_call=True),
            ],
        )

    def _open_root(
        self,
        module: nn.Module,
        args: tuple[Any, ...],
        kwargs: dict[str, Any] | None,
        max_depth: int,
    ) -> None:
        plan = self._identities.plan(module, max_depth)
        self._suspend_global_watch()
        if plan.scripted:
            from torch.nn.modules.module import register_module_forward_hook

            self._script_hooks = [
                register_module_forward_hook(self._exit, with_kwargs=True, always_call=True)
            ]
        elif self._hooked_plans.get(id(plan), (None,))[0] is not plan:
            for member, _, _, _ in plan.members.values():
                self._ensure_hooked(member)
            self._hooked_plans[id(plan)] = (plan, self._submodules(plan))
        try:
            self._stack.open_root(module, args, kwargs, plan)
        finally:
            if not self._stack.frames:  # (it failed before the call was opened)
                self._close_root()
                self._resume_global_watch()
        if plan.scripted:
            return
        submodules = self._hooked_plans[id(plan)][1]
        if self._stack.frames and self._stack.frames[0].settled:
            if submodules:
                self._detached.take_out(id(plan), submodules)
        elif submodules or id(module) in self._detached.out:
            self._detached.put_back([id(module), *(id(m) for m, _ in submodules)])

    def _submodules(self, plan: Plan) -> list[tuple[nn.Module, list[RemovableHandle]]]:
        """A plan's submodules whose hooks a settled root may take out (a tracked module keeps
        its own, which open its calls)."""
        return [
            self._hooked[id(member)]
            for member, path, _, _ in plan.members.values()
            if path and id(member) not in self._tracked
        ]

    def _close_root(self) -> None:
        for handle in self._script_hooks:
            handle.remove()
        self._script_hooks = []

    def _finish(self, frame: Frame, args: tuple[Any, ...], rest: tuple[Any, ...]) -> None:
        """The call ended: record it if it returned (else it raised), then close it."""
        try:
            # torch calls the hook from its exception handler when the forward raised
            if sys.exc_info()[1] is frame.ambient:
                self._stack.complete(frame, args, rest[0], rest[1])
        finally:
            if self._stack.pop():
                if self._script_hooks:
                    self._close_root()
                self._resume_global_watch()

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
        except Exception:
            self._errors.internal()

    def _watch_global(self, module: nn.Module, args: tuple[Any, ...]) -> None:
        # A hooked module's own pre-hook opens its call, with its keyword arguments (unless a
        # settled root took its hooks out).
        if (
            not self._stack.frames
            and (id(module) not in self._hooked or id(module) in self._detached.out)
            and get_ident() == self._thread
        ):
            self._run(self._open_root, module, args, None, self._max_depth)

    def _watch_tracked_scripted(self, module: nn.Module, args: tuple[Any, ...]) -> None:
        if not self._stack.frames and id(module) in self._tracked and get_ident() == self._thread:
            depth = self._tracked[id(module)][1]
            self._run(self._open_root, module, args, None, depth)

    def _enter(self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if get_ident() != self._thread:
            return
        frames = self._stack.frames
        if frames:
            plan = self._stack.plan
            # (a settled root's submodules are not recorded; a call of the root itself within
            # it is, so that its own end is told from the root's)
            settled = frames[0].settled and module is not frames[0].module
            if plan is not None and id(module) in plan.members and not settled:
                self._run(self._stack.push_sub, module, args, kwargs)
            return
        tracked = self._tracked.get(id(module))
        if tracked is not None or self._watch_all:
            depth = self._max_depth if tracked is None else tracked[1]
            self._run(self._open_root, module, args, kwargs, depth)

    def _exit(self, module: nn.Module, args: tuple[Any, ...], *rest: Any) -> None:
        """Called as a call returns or raises (``rest``: kwargs and the result; torch gives a
        global always-called hook no kwargs when the forward raised)."""
        frames = self._stack.frames
        if frames and frames[-1].module is module and get_ident() == self._thread:
            self._run(self._finish, frames[-1], args, rest)
