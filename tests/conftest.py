"""Shared fixtures for the test suite."""

from __future__ import annotations

import pytest
import torch

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
