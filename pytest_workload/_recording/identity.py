"""What a call's workload is, cached per test, and forgotten when a module tree changes
(docs/explanation/recording.md, "When a module changes itself"): reading a structure costs a
tree walk. A registration anywhere drops the cache; an :class:`AttributeWatch` is checked
whenever a cached identity is looked up (once per root call, as it opens, and once per recorded
submodule call).
"""

from __future__ import annotations

import inspect
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._core.errors import UndescribableInputError
from .._core.strict_json import Json
from .._fingerprint.describe import Describer, describe_args
from .._fingerprint.structure import (
    FingerprintScheme,
    StatsMemo,
    StructureMemo,
    child_structure_hashes,
    class_name,
    param_stats,
    structure_hash,
)
from .._perf import device_for, device_of
from .._torch_internals import Table, own_parameters
from .._workload.modules import hash_without_dtypes
from .._workload.signature import InputSignature
from .._workload.workload import ParamStats
from .plan import Plan, build_plan, untraced

if TYPE_CHECKING:
    from torch import nn
    from torch.nn import Parameter
    from torch.utils.hooks import RemovableHandle


_Getter = Callable[[dict[str, Any]], object]
_Watched = tuple[dict[str, Any], int, _Getter, object]
#: Each module's watched attributes and its subtree's, read once per root call (its nested
#: identities share them), keyed by id; the module is kept so the id stands.
WatchMemo = dict[int, tuple["nn.Module", tuple[_Watched, ...]]]


@dataclass(frozen=True)
class AttributeWatch:
    """The public attributes of every module of a tree as they were when its identity was
    read. Checking it costs one ``len`` and one C-level item getter per module, not a re-read;
    an attribute replaced by an equal value (``self.shape = x.shape`` in every forward) is
    not a change. A value mutated in place (a list attribute appended to) is not seen."""

    seen: tuple[_Watched, ...]

    def unchanged(self) -> bool:
        try:
            for state, size, getter, values in self.seen:  # (checked on every call)
                if len(state) != size or getter(state) != values:
                    return False
        except Exception:  # deleted since (KeyError), or a value that == cannot compare
            return False
        return True


IdentityKey = tuple[int, bool, object, object, str]


@dataclass(frozen=True)
class Identity:
    """What a (module, train/eval mode, signature) always yields: computed once per test,
    again when an attribute of its tree changed."""

    target: nn.Module
    signature: InputSignature
    watch: AttributeWatch
    structure_hash: str
    structure_hash_without_dtypes: str
    hash: str
    class_name: str
    params: ParamStats
    arg_names: tuple[str, ...]
    submodules: tuple[tuple[str, str], ...]
    output: Json
    device: str
    #: Whether a clock read around a call times its execution: on CUDA or MPS the call
    #: returns once its kernels are launched, long before they finish.
    clocked: bool
    #: what it is cached by (:meth:`IdentityCache.key`)
    key: IdentityKey


class IdentityCache:
    """Identities and root plans read from module trees, valid until a tree changes."""

    def __init__(self, describe: Describer | None, scheme: FingerprintScheme) -> None:
        self.scheme = scheme
        self.describe = describe
        self._known: dict[IdentityKey, Identity] = {}
        # by a module's id: the module, and the parameter table and name of its first parameter
        self._first_owner: dict[int, tuple[nn.Module, Table[Parameter | None] | None, str]] = {}
        self._plans: dict[tuple[int, int], tuple[nn.Module, Plan]] = {}
        self._registration_watch: list[RemovableHandle] = []
        #: bumped whenever what was read is forgotten, so a caller can tell whether an
        #: identity it holds still stands (a lazy module registers parameters in its forward)
        self.generation = 0
        # structure hashes read during one root call: its submodules complete before it, so
        # each module of the tree is hashed once per root call, not once per recorded ancestor
        self._memo: StructureMemo = {}
        # structure hashes without dtypes, by structure hash (read from the descriptions)
        self._without_dtypes: dict[str, str] = {}
        self._watch_memo: WatchMemo = {}
        self._stats_memo: StatsMemo = {}
        self._arg_names: dict[object, tuple[str, ...]] = {}
        #: whether the running root call read a tree (forgotten as it ends)
        self.read = False
        #: every module description read in this test, by its hash (content-addressed, so
        #: never stale: kept when the memo is dropped)
        self.descriptions: dict[str, dict[str, Json]] = {}

    def watch(self) -> None:
        """Forget what was read whenever a submodule or a parameter is registered anywhere (not
        a buffer: docs/explanation/recording.md, "When a module changes itself")."""
        from torch.nn.modules import module as torch_module

        self._registration_watch = [
            torch_module.register_module_module_registration_hook(self.forget),
            torch_module.register_module_parameter_registration_hook(self.forget),
        ]

    def unwatch(self) -> None:
        for handle in self._registration_watch:
            handle.remove()
        self._registration_watch.clear()

    def forget(self, *_: Any) -> None:
        self.generation += 1
        self.root_ended()
        self._known.clear()
        self._plans.clear()
        self._first_owner.clear()

    def root_ended(self) -> None:
        """Forget the structure hashes read during a root call (a tree may change between
        calls without registering anything: ``model.half()``)."""
        self.read = False
        self._memo.clear()
        self._watch_memo.clear()
        self._stats_memo.clear()

    def plan(self, module: nn.Module, max_depth: int) -> Plan:
        cached = self._plans.get((id(module), max_depth))
        if cached is not None and cached[0] is module:
            return cached[1]
        plan = build_plan(module, max_depth)
        self._plans[(id(module), max_depth)] = (module, plan)
        return plan

    def identity(
        self,
        target: nn.Module,
        described: tuple[tuple[Json, ...], tuple[tuple[str, Json], ...]],
        inputs: str,
        call: tuple[tuple[Any, ...], dict[str, Any]],
        result: Any,
    ) -> Identity:
        """The identity of a call of ``target`` with inputs ``described`` (as JSON; ``inputs``
        is its process-local key, the ``repr`` of ``described``) and ``call`` (as passed),
        computed when (module, mode, parameter dtype, device, inputs) is new; the structure is
        read afresh then, so ``model.half()`` between calls counts."""
        key = self.key(target, inputs, call)
        known = self._known.get(key)
        if known is not None and known.target is target and known.watch.unchanged():
            return known
        from torch import Tensor

        self.read = True
        device = str(key[3])
        signature = InputSignature(*described)
        with untraced():
            structure = structure_hash(target, self._memo, self.descriptions)
            try:
                output = describe_args((result,), self.describe)[0]
            except UndescribableInputError:
                output = None  # outputs are informative only; an opaque one is not an error
            known = self._known[key] = Identity(
                target=target,
                signature=signature,
                watch=AttributeWatch(_subtree(target, self._watch_memo, Tensor)),
                structure_hash=structure,
                structure_hash_without_dtypes=hash_without_dtypes(
                    self.descriptions, structure, self._without_dtypes
                ),
                hash=self.scheme.workload_hash(structure, signature),
                class_name=class_name(target),
                params=param_stats(target, self._stats_memo),
                arg_names=self._names_of_arguments(target),
                submodules=child_structure_hashes(target, self._memo),
                output=output,
                device=device,
                clocked=device_for(device).clocked,
                key=key,
            )
        return known

    def known(
        self, target: nn.Module, inputs: str, call: tuple[tuple[Any, ...], dict[str, Any]]
    ) -> Identity | None:
        """The identity of such a call if one was computed already (a cheap look-up)."""
        known = self._known.get(self.key(target, inputs, call))
        if known is None or known.target is not target or not known.watch.unchanged():
            return None
        return known

    def key(
        self, target: nn.Module, inputs: str, call: tuple[tuple[Any, ...], dict[str, Any]]
    ) -> IdentityKey:
        """The key a call's identity is cached by."""
        # ``next(target.parameters())`` without walking the tree on every call: where it lives
        # is found once, and it is read there afresh (``.half()`` casts it in place, an
        # assignment replaces it there)
        cached = self._first_owner.get(id(target))
        if cached is None or cached[0] is not target:
            found = (
                (m, name) for m in target.modules() for name, _ in m.named_parameters(recurse=False)
            )
            owner, name = next(found, (None, ""))
            table = None if owner is None else own_parameters(owner)
            cached = self._first_owner[id(target)] = (target, table, name)
        _, table, name = cached
        first = table[name] if table is not None and name in table else None  # (deleted since?)
        # a module without parameters runs where its inputs are
        device = device_of(target, *call) if first is None else first.device
        dtype = None if first is None else first.dtype
        return (id(target), target.training, dtype, device, inputs)

    def _names_of_arguments(self, module: nn.Module) -> tuple[str, ...]:
        """``forward``'s positional parameter names, read once per forward function."""
        function = getattr(module.forward, "__func__", None)
        names = None if function is None else self._arg_names.get(function)
        if names is None:
            try:
                params = list(inspect.signature(module.forward).parameters.values())
            except (TypeError, ValueError):
                params = []
            names = tuple(
                p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            )
            if function is not None:
                self._arg_names[function] = names
        return names


def _subtree(module: nn.Module, memo: WatchMemo, tensor: type) -> tuple[_Watched, ...]:
    cached = memo.get(id(module))
    if cached is not None and cached[0] is module:
        return cached[1]
    state = vars(module)
    # tensors never enter a structure hash (a scripted module keeps none of its attributes
    # here, not even "training")
    names = [k for k, v in state.items() if k[0] != "_" and not isinstance(v, tensor)]
    # (none to read: ``len``, which the size check before it already compares)
    getter: _Getter = operator.itemgetter(*names) if names else len
    seen: list[_Watched] = [(state, len(state), getter, getter(state))]
    for child in module.children():
        seen += _subtree(child, memo, tensor)
    memo[id(module)] = (module, tuple(seen))
    return memo[id(module)][1]
