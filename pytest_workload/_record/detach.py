"""Submodule hooks taken out of torch's tables while a settled root runs.

A root whose observed calls all ran the same submodule calls *settles* (see
``rows.OBSERVED_CALLS``): its later calls run its submodules on torch's hook-free path, and
their rows get the calls the observed ones made. The hooks stay out until a call needs them
again (a root that records its submodules, or a submodule called at top level), so a settled
root's call costs no per-submodule work at all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torch import nn
    from torch.utils.hooks import RemovableHandle

#: A hook taken out: its table, its key there, the hook.
_Taken = tuple[dict[int, Any], int, Any]


class Detached:
    """The recorder's submodule hooks that are out of torch's tables, by module."""

    def __init__(self) -> None:
        #: the hooks out, by module id (read on every root call: no method in between)
        self.out: dict[int, list[_Taken]] = {}
        # bumped whenever hooks go back in: a plan taken out before must be taken out again
        self._generation = 0
        self._settled: dict[int, int] = {}

    def take_out(
        self, plan_id: int, members: list[tuple[nn.Module, list[RemovableHandle]]]
    ) -> None:
        """Take the hooks of a settled root's submodules out (once, until some go back in).
        A module whose tables hold other hooks too keeps them all, in their order (its calls
        are then ignored while the root runs)."""
        if self._settled.get(plan_id) == self._generation:
            return
        for module, handles in members:
            if id(module) in self.out:
                continue
            tables = [handle.hooks_dict_ref() for handle in handles]
            if all(
                table is not None and len(table) == 1 and handle.id in table
                for table, handle in zip(tables, handles, strict=True)
            ):
                self.out[id(module)] = [
                    (table, handle.id, table.pop(handle.id))
                    for table, handle in zip(tables, handles, strict=True)
                    if table is not None
                ]
        self._settled[plan_id] = self._generation

    def put_back(self, module_ids: list[int]) -> None:
        """Put the hooks of these modules back in, where they are out."""
        back = [self.out.pop(i) for i in module_ids if i in self.out]
        for taken in back:
            for table, key, hook in taken:
                table[key] = hook
        if back:
            self._generation += 1

    def forget(self) -> None:
        """Recording ended: the hooks are being removed (a hook that is out needs nothing)."""
        self.out.clear()
        self._settled.clear()
