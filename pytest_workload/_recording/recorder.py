"""``WorkloadRecorder``, the facade a test sees over this package's parts; its roots are
measured after the test, in ``_perf.orchestrate``. A fixture that calls its model in its setup
runs it before recording begins: :func:`module_calls` watches each fixture's setup, so that
the tests that use such a fixture can say their calls were not recorded.
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .._compile.health import Readiness
from .._fingerprint.describe import Describer
from .._fingerprint.structure import CURRENT_SCHEME, FingerprintScheme, structure_hash
from .._perf import (
    FirstCall,
    Replays,
    SessionBudget,
    TimingPolicy,
    check_compile,
    measure_calls,
    mismatch,
    trained_as,
)
from .._torch_internals import GlobalWatch, compiling_check
from .._workload.timing import Measured
from .._workload.workload import TestWorkloads, Workload
from .hooks import Hooks
from .identity import IdentityCache
from .rows import Entry, RowTable
from .stack import CallStack, Keyer

if TYPE_CHECKING:
    from torch import nn

M = TypeVar("M", bound="nn.Module")

#: torch.compile warns whenever a global module hook exists; the watch hook is meant to see
#: compiled modules, so that warning is not the user's concern.
COMPILE_HOOK_WARNING = r"Using `torch.compile\(module\)` when there are global hooks"


def _check_depth(depth: object) -> None:
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
        raise ValueError(f"max_depth must be an int >= 0, got {depth!r}")


class WorkloadRecorder:
    """Records the workloads of one test, or of any code outside pytest.

    In a test, the ``workloads`` fixture gives the test's recorder. Outside pytest, make one,
    track a model, call it, stop, and read what was recorded.

    Examples:
        >>> import torch
        >>> from torch import nn
        >>> recorder = WorkloadRecorder("zoo/mlp")
        >>> model = recorder.track(nn.Sequential(nn.Linear(8, 4), nn.ReLU()), max_depth=1)
        >>> _ = model(torch.rand(2, 8)), model(torch.rand(2, 8)), model(torch.rand(5, 8))
        >>> recorder.stop()
        >>> [(w.label, w.depth, w.calls) for w in recorder.workloads()]
        [('model', 0, 2), ('0', 1, 2), ('1', 1, 2), ('model', 0, 1), ('0', 1, 1), ('1', 1, 1)]

    ``track(model)`` records calls of that model (and its submodules down to ``max_depth``);
    ``start()`` records every module called at top level instead. Each workload's ``hash`` and
    ``key`` are what a cache can be keyed by. A root's ``timing`` and ``flops`` are measured by
    the plugin after a test, so outside pytest they stay None.

    Args:
        nodeid: The name the workloads are recorded under (in a test, its node id).
        max_depth: How deep below a root its submodules are recorded; 0 records only roots.
        timing: Time the recorded calls as they run (``Workload.total_time_s``).
        describe: Describes an input type pytest-workload does not know, as the
            ``pytest_workload_describe`` hook does: ``describe(value)`` returns JSON, or None
            to decline.
        keyer: Your own key for each call, as the ``pytest_workload_key`` hook returns it:
            ``keyer(module, args, kwargs)`` returns JSON, or None for no key.
        rootdir: Call sites (``Workload.location``) are written relative to it.
        replays: Keep each workload's first inputs so that the plugin can replay it for
            timing; False copies nothing.
        scheme: The fingerprint scheme that hashes are computed under: the current one (the
            plugin's tests pass a faulty one, to show that its gates catch the collapse).

    Raises:
        ValueError: ``max_depth`` is not an int of at least 0.
    """

    def __init__(
        self,
        nodeid: str,
        *,
        max_depth: int = 0,
        timing: bool = True,
        describe: Describer | None = None,
        keyer: Keyer | None = None,
        rootdir: Path | None = None,
        replays: bool = True,
        scheme: FingerprintScheme = CURRENT_SCHEME,
    ) -> None:
        _check_depth(max_depth)
        self.nodeid = nodeid
        self.replays = replays
        self.max_depth = max_depth
        self.timing = timing
        self._rootdir = None if rootdir is None else str(rootdir)
        #: the plugin's own: each new root is compiled with this backend after the test, in a
        #: forked child, for its compile readiness (the marker's ``compile=``; None: never)
        self.compile_backend: str | None = None
        self._rows = RowTable(timing=timing)
        # what :meth:`measure` found for each new top-level row, by row (not kept on the rows)
        self._measurements: dict[int, Measured] = {}
        self._readiness: dict[int, Readiness] = {}
        identities = IdentityCache(describe, scheme)
        self._identities: IdentityCache | None = identities
        stack = CallStack(
            identities,
            self._rows,
            keyer=keyer,
            rootdir=self._rootdir,
            copies=replays,
        )
        self._errors = stack.errors
        self._hooks: Hooks | None = Hooks(stack, identities, max_depth)
        self._stopped = False
        self._released: TestWorkloads | None = None

    def start(self) -> None:
        """Record every module called at top level until ``stop()``."""
        self._open().track(None, 0)

    def track(self, module: M, *, max_depth: int | None = None) -> M:
        """Record calls of ``module`` (and its submodules down to ``max_depth``); returns it.

        Args:
            module: A ``torch.nn.Module``; a compiled or wrapped one records as it runs.
            max_depth: Overrides the recorder's ``max_depth`` for this module.

        Raises:
            TypeError: ``module`` is not a ``torch.nn.Module``.
            RuntimeError: Recording has ended (``stop()`` was called).
        """
        from torch import nn

        hooks = self._open()
        if not isinstance(module, nn.Module):
            raise TypeError(f"track() takes a torch.nn.Module, got {type(module).__qualname__}")
        depth = self.max_depth if max_depth is None else max_depth
        _check_depth(depth)
        hooks.track(module, depth)
        return module

    @contextlib.contextmanager
    def recording(self, *, all_roots: bool) -> Iterator[None]:
        """Record during a block (a test's call); every hook is gone when it ends. The
        plugin's own: outside pytest, use ``track`` or ``start`` and ``stop``."""
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=COMPILE_HOOK_WARNING)
            if all_roots:
                self.start()
            try:
                yield
            finally:
                self.stop()

    def stop(self) -> None:
        """Remove every hook. Idempotent; a root still running is dropped."""
        self._stopped = True
        if self._hooks is not None:
            self._hooks.remove_all()

    @property
    def errors(self) -> tuple[str, ...]:
        """Problems met while recording (undescribable inputs, internal errors)."""
        return tuple(self._errors)

    def workloads(self) -> TestWorkloads:
        """The workloads recorded so far, parents before children, in order of first call."""
        if self._released is not None:
            return self._released
        assert self._identities is not None  # (dropped only once released)
        return self._rows.to_workloads(
            self.nodeid, self._identities.descriptions, self._measurements, self._readiness
        )

    def __iter__(self) -> Iterator[Workload]:
        return iter(self.workloads())

    def __len__(self) -> int:
        return len(self.workloads()) if self._released is not None else len(self._rows)

    def measure(
        self,
        policy: TimingPolicy | None,
        budget: SessionBudget | None = None,
        *,
        replays: Replays = "timing",
        progress: Callable[[int, int], None] | None = None,
    ) -> list[str]:
        """The plugin's own: measure each new top-level workload once recording has ended
        (timing unless ``policy`` is None or the session's ``budget`` declines it, from the
        test's own calls unless ``replays`` is ``timing``; FLOPs where its first call could not
        count them, by a replay unless ``replays`` is ``never``; compile readiness when
        ``compile_backend`` is set); returns a line per workload whose measurement is
        missing or approximate, or whose readiness was not checked."""
        if not self._stopped:
            raise RuntimeError("measure() replays calls, so recording must have ended")
        taken = self._rows.take_first_calls()
        calls = [self._filled(entry, first) for entry, first in taken]
        measurements, problems = measure_calls(
            calls, policy, budget, replays=replays, progress=progress
        )
        rows = [entry.row for entry, _ in taken]
        self._measurements.update(zip(rows, measurements, strict=True))
        if self.compile_backend is not None:
            readiness, not_checked = check_compile(calls, self.compile_backend, self._rootdir)
            self._readiness.update(
                (r, ok) for r, ok in zip(rows, readiness, strict=True) if ok is not None
            )
            problems += not_checked
        return problems

    def release(self) -> None:
        """Keep the workloads as data and drop every module, input and output reference (the
        test has ended: a model it made must not outlive it). Idempotent."""
        self.stop()
        if self._released is None:
            self._released = self.workloads()
        self._rows = RowTable(timing=self.timing)
        self._hooks = None
        self._identities = None

    def _filled(self, entry: Entry, first: FirstCall) -> FirstCall:
        """``first`` with its row's facts filled in."""
        identity = entry.identity
        first.changed = mismatch(first.captured, first.target)
        # (never replayed: its own calls were timed as they ran, whatever changed since)
        if self.replays and first.changed is None:
            with trained_as(first.captured, first.target):
                if structure_hash(first.target) != identity.structure_hash:
                    first.changed = "its structure differs"
        first.title = f"{entry.done.name} ({identity.class_name})"
        first.workload_hash = identity.hash
        first.device = identity.device
        first.observed_s = () if entry.untimed else tuple(ns / 1e9 for ns in entry.samples_ns)
        first.calls = entry.calls
        return first

    def _open(self) -> Hooks:
        if self._stopped:
            raise RuntimeError(f"recording for {self.nodeid} has ended")
        assert self._hooks is not None  # (dropped only once stopped)
        return self._hooks


@contextlib.contextmanager
def module_calls() -> Iterator[list[str]]:
    """The class name of the first module called in the block, if any (none where torch is not
    imported: then no module can run). The watch takes itself out at that first call, so the
    rest of the block (a compile, an export, a trace of the model) runs as without it; dynamo
    traces it as a no-op, as it does the recorder's."""
    called: list[str] = []
    if "torch" not in sys.modules:
        yield called
        return
    compiling = compiling_check()

    def watch(module: Any, args: Any) -> None:
        if compiling():
            return
        called.append(type(module).__qualname__)
        watcher.suspend()

    watcher = GlobalWatch(watch, lambda module, args: None)  # (it opens no root here)
    try:
        with warnings.catch_warnings():  # (a fixture may compile its model)
            warnings.filterwarnings("ignore", message=COMPILE_HOOK_WARNING)
            yield called
    finally:
        watcher.remove()
