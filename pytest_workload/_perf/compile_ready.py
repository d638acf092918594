"""Compile readiness of a test's new top-level workloads: each first call, as the test made
it, handed to :func:`.._compile.check_readiness` (which compiles in a forked child)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .._compile import Readiness, ReadyCall, check_readiness
from .._torch_internals import compiled_original
from .device import device_for
from .first_call import applied, copy_inputs, mismatch
from .orchestrate import RecordedCall

if TYPE_CHECKING:
    from torch import nn


def _skipped(call: RecordedCall) -> str | None:
    """Why a call's readiness is not checked (None: it is)."""
    if compiled_original(call.module) is not None:
        return "the test compiles it itself (its compile health is observed)"
    if (unforkable := device_for(call.device).unforkable) is not None:
        return unforkable
    # (a structure that changed since is compiled as it is now, in the child: an attribute the
    # forward changes per call is what a recompile shows)
    changed = mismatch(call.context, call.target)
    if changed is not None:
        return f"the module changed after its call ({changed})"
    return call.unsafe


def _ready_call(call: RecordedCall) -> ReadyCall:
    def run(compiled: nn.Module) -> object:
        import torch

        (args, kwargs), _ = copy_inputs((call.args, call.kwargs))
        # without grad: a process that has run a backward leaves autograd's threads in a
        # state a forked child cannot use, and aot_eager traces the backward with them; the
        # breaks and recompiles are dynamo's, of the forward, either way
        with applied(call.context, call.target), torch.no_grad():
            return compiled(*args, **kwargs)

    return ReadyCall(call.target, run, min(call.calls, 2))


def check_compile(
    calls: Sequence[RecordedCall], backend: str, rootdir: str | None
) -> tuple[list[Readiness | None], list[str]]:
    """Each call's readiness (None: not checked), and a line per call saying why one was
    not."""
    skipped = [_skipped(call) for call in calls]
    checked = [call for call, why in zip(calls, skipped, strict=True) if why is None]
    found: list[Readiness] | str = []
    if checked:
        found = check_readiness([_ready_call(c) for c in checked], backend, rootdir)
    results: list[Readiness | None] = []
    lines = []
    answers = iter(found if isinstance(found, list) else ())
    for call, why in zip(calls, skipped, strict=True):
        if why is None and isinstance(found, list):
            results.append(next(answers))
            continue
        results.append(None)
        reason = f"not checked: {why}" if why is not None else str(found)
        lines.append(f"{call.name} ({call.class_name}): compile readiness {reason}")
    return results, lines
