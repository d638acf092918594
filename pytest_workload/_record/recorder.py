"""Recording: which modules run during a test, with which inputs.

``WorkloadRecorder`` is the facade a test sees; the work is done by its parts: ``hooks``
(which torch hooks exist and when), ``stack`` (the calls in progress), ``identity`` (what a
call's workload is, cached until a module tree changes), ``rows`` (calls aggregated per
workload and caller), ``callsite`` (where a root was called from) and ``convert`` (rows to
stored data). Measuring happens after the test, in ``_measure.orchestrate``.

A call that raises is not recorded, nor are the calls it made; the exception reaches the caller
untouched. Errors of the recorder itself (an input it cannot describe, an internal failure) are
collected and reported when the test ends, never raised into the model's forward.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from .._identity.describe import Describer
from .._identity.fingerprint import CURRENT_SCHEME, FingerprintScheme
from .._measure.orchestrate import RecordedCall, measure_calls
from .._measure.timing import TimingPolicy
from .._model.workload import TestWorkloads, Workload
from .convert import to_test_workloads
from .errors import ErrorLog
from .hooks import Hooks
from .identity import IdentityCache
from .rows import RowTable
from .stack import CallStack, Keyer

if TYPE_CHECKING:
    from torch import nn

__all__ = ["Keyer", "WorkloadRecorder"]

M = TypeVar("M", bound="nn.Module")

_COMPILE_HOOK_WARNING = r"Using `torch.compile\(module\)` when there are global hooks"


def _check_depth(depth: object, given: object) -> None:
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
        raise ValueError(f"max_depth must be an int >= 0, got {given!r}")


class WorkloadRecorder:
    """Records the workloads of one test. Returned by the ``workloads`` fixture.

    ``start()`` records every module called at top level; ``track(model)`` records only the
    modules given. Read the result with ``workloads()`` (or iterate the recorder).
    """

    def __init__(
        self,
        nodeid: str,
        *,
        max_depth: int = 0,
        timing: bool = True,
        scheme: FingerprintScheme = CURRENT_SCHEME,
        describe: Describer | None = None,
        keyer: Keyer | None = None,
        alternate_schemes: Sequence[FingerprintScheme] = (),
        rootdir: Path | None = None,
    ) -> None:
        _check_depth(max_depth, max_depth)
        self.nodeid = nodeid
        self.max_depth = max_depth
        self.timing = timing
        self.scheme = scheme
        alternates = [s for s in alternate_schemes if s.version != scheme.version]
        self._errors = ErrorLog()
        self._rows = RowTable(timing=timing)
        identities = IdentityCache(scheme, alternates, describe)
        stack = CallStack(
            identities, self._rows, self._errors, describe=describe, keyer=keyer, rootdir=rootdir
        )
        self._hooks = Hooks(stack, identities, self._errors, max_depth)
        self._stopped = False

    def start(self) -> None:
        """Record every module called at top level until ``stop()``."""
        self._check_open()
        self._hooks.watch_all()

    def track(self, module: M, *, max_depth: int | None = None) -> M:
        """Record calls of ``module`` (and its submodules down to ``max_depth``); returns it."""
        from torch import nn

        self._check_open()
        if not isinstance(module, nn.Module):
            raise TypeError(f"track() takes a torch.nn.Module, got {type(module).__qualname__}")
        depth = self.max_depth if max_depth is None else max_depth
        _check_depth(depth, max_depth)
        self._hooks.track(module, depth)
        return module

    @contextlib.contextmanager
    def recording(self, *, all_roots: bool) -> Iterator[None]:
        """Record during a block (a test's call); every hook is gone when it ends."""
        with warnings.catch_warnings():
            # torch.compile warns whenever a global module hook exists; the watch hook is
            # meant to see compiled modules, so that warning is not the user's concern.
            warnings.filterwarnings("ignore", message=_COMPILE_HOOK_WARNING)
            if all_roots:
                self.start()
            try:
                yield
            finally:
                self.stop()

    def stop(self) -> None:
        """Remove every hook. Idempotent; a root still running is dropped."""
        self._stopped = True
        self._hooks.remove_all()

    @property
    def errors(self) -> tuple[str, ...]:
        """Problems met while recording (undescribable inputs, internal errors)."""
        return self._errors.messages

    def workloads(self) -> TestWorkloads:
        """The workloads recorded so far, parents before children, in order of first call."""
        return to_test_workloads(self.nodeid, self._rows)

    def __iter__(self) -> Iterator[Workload]:
        return iter(self.workloads())

    def __len__(self) -> int:
        return len(self._rows)

    def measure(self, policy: TimingPolicy | None) -> list[str]:
        """Replay each new top-level workload once recording has ended (FLOPs, and timing
        unless ``policy`` is None); returns what could not be measured."""
        if not self._stopped:
            raise RuntimeError("measure() replays calls, so recording must have ended")
        taken = self._rows.take_first_calls()
        calls = [
            RecordedCall(
                e.done.name,
                e.done.identity.class_name,
                m,
                e.done.identity.target,
                a,
                k,
                e.done.identity.hash,
            )
            for e, (m, a, k) in taken
        ]
        measurements, problems = measure_calls(calls, policy)
        for (entry, _), measured in zip(taken, measurements, strict=True):
            entry.measurement = measured
        return problems

    def _check_open(self) -> None:
        if self._stopped:
            raise RuntimeError(f"recording for {self.nodeid} has ended")
