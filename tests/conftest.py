"""Shared fixtures for the test suite."""

from __future__ import annotations

import pytest
import torch

from pytest_workload._perf.device import CpuDevice, substituted
from pytest_workload._perf.stopwatch import Lap
from pytest_workload._tracing.tracer import count_flops
from tests.models import TinyNet
from tests.pytester_suite import MODELS, SUITE_INI, XDIST_MODES

# pytester's in-process runs drop the modules an inner run imported; torch registers operator
# libraries when some of them are first imported and refuses to do it twice. Import them here,
# once, so no inner run is the first to: counting FLOPs once pulls them all in.
count_flops(torch.nn.Linear(1, 1), (torch.rand(1, 1),), {})


@pytest.fixture
def tiny() -> TinyNet:
    torch.manual_seed(0)
    return TinyNet().eval()


@pytest.fixture(autouse=True)
def _not_an_xdist_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inner pytester runs must not inherit the outer run's xdist worker identity: syrupy reads
    it from the environment and would skip its unused-snapshot report."""
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def suite(pytester: pytest.Pytester):
    """Write a test module whose model calls and kernel size a test can change."""

    pytester.makeini(SUITE_INI)

    def write(body: str, kernel: int = 3, name: str = "test_models") -> None:
        pytester.makepyfile(**{name: MODELS + f"\nKERNEL = {kernel}\n" + body})

    return write


@pytest.fixture(params=list(XDIST_MODES), ids=list(XDIST_MODES))
def mode(request: pytest.FixtureRequest) -> tuple[str, ...]:
    """Arguments that run an inner session without xdist, with -n 0 and with -n 2."""
    return XDIST_MODES[request.param]


def injected_kernel():
    """Stands for the calibration kernel, so the injected device can tell its blocks."""


class InjectedDevice(CpuDevice):
    """The CPU with a fake clock: it runs the calls, but says each workload call computed for
    ``wall`` seconds and waited ``wait`` more, and each call of its calibration kernel computed
    for ``kernel`` seconds, plus what the calls ``charge``."""

    def __init__(self, device):
        super().__init__(device)
        self.wall, self.kernel, self.wait = 0.01, 0.001, 0.0

    def calibration(self):
        return injected_kernel

    def lap(self, fn, number):
        _charged.clear()
        for _ in range(number):
            fn()
        if fn is injected_kernel:
            return Lap(self.kernel * number, self.kernel * number)
        spent, wait = self.wall * number + sum(_charged), self.wait * number
        return Lap(spent + wait, spent, wait)


@pytest.fixture
def injected():
    """Timings of in-process runs from the injected device, so what the gate decides depends
    on the test alone, never on this machine's load or cores.

    Every replayed workload call takes 10 ms and every kernel call 1 ms unless the test says
    otherwise (``injected(wall, kernel=...)``). It reaches only pytester's in-process runs
    (``runpytest`` without ``-n 2``): a subprocess or an xdist worker times with real clocks."""
    device = InjectedDevice(torch.device("cpu"))

    def set_timing(wall, kernel=0.001, wait=0.0):
        device.wall, device.kernel, device.wait = wall, kernel, wait

    with substituted("cpu", lambda _: device):
        yield set_timing


#: Seconds that inner models said their calls took (see ``charge``), since the last block.
_charged: list[float] = []


def charge(seconds):
    """Called by an inner test's model (``from tests.conftest import charge``): under the
    injected stopwatch, the call takes ``seconds`` more. Models whose tests differ in time (a
    branch that one test's input takes, a slowdown in one test) say so with it."""
    _charged.append(seconds)
