"""Measuring a top-level workload by replaying its first call after the test, under the
state the call was made in, on a copy of its inputs, leaving no trace: what is put back, and
what cannot be, is docs/explanation/timing.md's "What is measured". An exception from a replay
(``pytest.fail``, ``SystemExit`` too) is returned as a problem; only ``KeyboardInterrupt`` goes
through."""

from __future__ import annotations

import ast
import functools
import itertools
import random
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .._torch_internals import global_hook_tables, module_hook_tables, tensor_version
from .._tracing import count_flops, own_tensors
from .._workload.timing import OFF, REPLAYED, Measured, not_measured
from .device import KINDS, device_for, device_of
from .first_call import CallContext, applied, capture, copy_inputs, reachable
from .stopwatch import TimingPolicy, Unmeasured, time_call

if TYPE_CHECKING:
    import torch
    from torch import nn


def _put_back(container: Any, saved: Any) -> None:
    """Refill ``container`` with ``saved`` (None: empty) unless it holds the same elements by
    identity (``==`` would compare tensors' values)."""
    if saved is None:
        same = not container
    elif isinstance(container, dict):
        same = container.keys() == saved.keys() and all(v is saved[k] for k, v in container.items())
    elif isinstance(container, list):
        same = list(map(id, container)) == list(map(id, saved))
    else:
        same = bool(container == saved)
    if not same:
        container.clear()
        if isinstance(container, list):
            container.extend(saved or ())
        else:
            container.update(saved or ())


class NotIsolableError(Exception):
    """A replay would change something it cannot put back; it is not run."""


def _generator_restorer(value: Any) -> Callable[[], None] | None:
    """What puts a generator's state back in place (other code holds its identity)."""
    if isinstance(value, random.Random):
        state = value.getstate()
        return lambda: value.setstate(state)
    numpy, torch = sys.modules.get("numpy"), sys.modules.get("torch")
    if numpy is not None and isinstance(value, numpy.random.Generator):
        bits, numpy_state = value.bit_generator, value.bit_generator.state
        return lambda: setattr(bits, "state", numpy_state)
    if (numpy is not None and isinstance(value, numpy.random.RandomState)) or (
        torch is not None and isinstance(value, torch.Generator)
    ):
        saved = value.get_state()
        return lambda: value.set_state(saved)
    return None


class AttributeState:
    """One object's attributes, and the contents of its containers, to put back."""

    def __init__(self, owner: object) -> None:
        self.owner = owner
        self.attributes = dict(vars(owner))
        # (most of a module's containers are empty hook tables: nothing to copy)
        self.contents = {
            name: value.copy() if value else None
            for name, value in self.attributes.items()
            if type(value) in (list, set) or isinstance(value, dict)
        }
        self.generators = [
            r for r in map(_generator_restorer, self.attributes.values()) if r is not None
        ]

    def stand_in_counts(self, memo: dict[int, Any]) -> None:
        """Bind a fresh ``itertools.count`` at the same place in place of each count attribute
        (one per shared count): one cannot be rewound, so the replay advances the fresh one and
        the module gets its own back untouched."""
        attributes = vars(self.owner)
        for name, value in self.attributes.items():
            if type(value) is not itertools.count:
                continue
            if id(value) not in memo:
                try:
                    start_step = ast.literal_eval(f"[{repr(value)[len('count(') : -1]}]")
                except (ValueError, SyntaxError):
                    raise NotIsolableError(
                        f"attribute {name} is {value!r}, an itertools.count the replay would "
                        "advance"
                    ) from None
                memo[id(value)] = itertools.count(*start_step)
            attributes[name] = memo[id(value)]

    def restore(self) -> None:
        attributes = vars(self.owner)
        for name in [n for n in attributes if n not in self.attributes]:
            del attributes[name]
        for name, value in self.attributes.items():
            if attributes.get(name, self) is not value:
                attributes[name] = value
        for name, saved in self.contents.items():
            _put_back(self.attributes[name], saved)
        for restore in self.generators:
            restore()


def _put_tensor_back(tensor: torch.Tensor, version: int | None, copy: torch.Tensor) -> None:
    """Copy the saved values back where they changed. Kernels that update state in place
    (batch norm's running statistics) do not always move the version counter, so values are
    compared too."""
    import torch

    if tensor.is_meta:
        return  # (no values)
    # (an inference tensor: no version counter, writable in inference mode)
    with torch.inference_mode() if version is None else torch.no_grad():
        if (version is None or tensor_version(tensor) == version) and torch.equal(tensor, copy):
            return
        tensor.copy_(copy)


@contextmanager
def isolated(roots: Sequence[nn.Module]) -> Iterator[None]:
    """Run the block, then put the module trees under ``roots`` and the RNGs back."""
    import torch

    modules = list({id(m): m for root in roots for m in root.modules()}.values())
    states = [AttributeState(m) for m in modules]
    unique = {id(t): t for m in modules for t in own_tensors(m)}
    with torch.no_grad():
        saved = [
            (t, None if t.is_inference() else tensor_version(t), t.detach().clone())
            for t in unique.values()
        ]
    rngs = [r for kind in KINDS if (r := kind.saved_rng()) is not None]
    rngs.append(functools.partial(random.setstate, random.getstate()))
    if (numpy := sys.modules.get("numpy")) is not None:
        rngs.append(functools.partial(numpy.random.set_state, numpy.random.get_state()))
    # (a module's empty hook table has nothing to suspend; what the replay adds to it, the
    # module's restored state takes out)
    tables = global_hook_tables() + [t for m in modules for t in module_hook_tables(m) if t]
    hooks = [table.copy() for table in tables]
    try:
        counts: dict[int, Any] = {}
        for state in states:
            state.stand_in_counts(counts)
        for table in tables:
            table.clear()
        yield
    finally:
        for table, saved_hooks in zip(tables, hooks, strict=True):
            _put_back(table, saved_hooks)
        for state in states:
            state.restore()
        for tensor, version, copy in saved:
            _put_tensor_back(tensor, version, copy)
        for rng in rngs:
            rng()


def replay(
    module: nn.Module,
    target: nn.Module,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    policy: TimingPolicy | None,
    *,
    context: CallContext | None = None,
    count: bool = True,
) -> Measured:
    """Measure calls of ``module`` whose unwrapped module is ``target``, under ``context``
    (default: the state now): the allocator's peak where the device reads it (CUDA), FLOPs
    (when ``count``) on ``target``, whose wrapper would recompile under the counter, and timing
    (unless ``policy`` is None) on ``module``, so a compiled model is timed compiled."""
    import torch

    context = capture(target) if context is None else context
    device = device_for(device_of(target, args, kwargs))
    flops = peak = timing = None
    problem: str | None = None
    try:
        with isolated((module, target)), applied(context, target):
            if count:
                flops = count_flops(target, *copy_inputs((args, kwargs))[0])
            (a, k), _ = copy_inputs((args, kwargs))
            # the objects among the inputs (a dataclass, a KV cache whose layers' tensors a
            # forward rebinds as it grows it) are put back after each call, so each computes
            # the first
            objects = [p for p in reachable((a, k)) if not isinstance(p, torch.Tensor)]
            caches = [AttributeState(part) for part in objects]

            def call() -> None:
                module(*a, **k)
                for cache in caches:
                    cache.restore()

            peak_of = device.peak()
            if peak_of is not None:
                peak_of.begin()
                call()
                peak = peak_of.end()
            if policy is not None:
                reference = device.calibration()
                with device.timing():
                    timing = time_call(call, device.lap, policy, str(device.device), reference)
                timing = replace(timing, threads=device.threads)
    except KeyboardInterrupt:
        raise
    except Unmeasured as exc:
        problem = str(exc)
    except BaseException as exc:  # the test's outcome is the test's own
        problem = f"the replay raised {type(exc).__name__}: {exc}"
    why = None if problem is None else not_measured(problem)
    return Measured(
        OFF if policy is None else why or REPLAYED,
        REPLAYED if flops is not None else why or not_measured("no replay counted them"),
        timed=None if why else timing,
        counted=flops,
        peak_memory_bytes=peak,
        problem=problem,
    )
