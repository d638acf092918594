"""The device seam: what each kind of device needs to time and measure a call. Other modules
ask :func:`device_for` instead of naming a kind; a test puts its own in with :func:`substituted`.
"""

from __future__ import annotations

import functools
import itertools
import os
import platform
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Final

from .._core.codec import Record
from .._core.errors import DeviceUnavailableError
from .._core.strict_json import Json
from .._core.text import plural
from .stopwatch import Lap, cpu_lap, pin_allocator

if TYPE_CHECKING:
    import torch
    from torch import nn


DEVICE_CHOICES: Final = "auto, cpu, cuda, cuda:N or mps"
_SPEC: Final = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")


def check_device_spec(spec: str) -> str:
    if not _SPEC.match(spec):
        raise DeviceUnavailableError(f"unknown workload device {spec!r}: use {DEVICE_CHOICES}")
    return spec


def resolve_device(spec: str) -> torch.device:
    """``auto`` is CUDA if available, else MPS, else CPU; others must exist here."""
    import torch

    available: dict[str, Callable[[], bool]] = {
        "cuda": torch.cuda.is_available,
        "mps": torch.backends.mps.is_available,
    }
    if check_device_spec(spec) == "auto":
        return torch.device(next((k for k, ok in available.items() if ok()), "cpu"))
    device, asked = torch.device(spec), f"workload device {spec!r} asked for, but"
    if device.type in available and not available[device.type]():
        raise DeviceUnavailableError(f"{asked} {device.type.upper()} is not available")
    count = torch.cuda.device_count() if device.type == "cuda" else 0
    if device.type == "cuda" and device.index is not None and device.index >= count:
        raise DeviceUnavailableError(f"{asked} this machine has {count} CUDA device(s)")
    return device


def device_of(module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> torch.device:
    """Where a call runs: the module's first parameter or buffer, else its first tensor input."""
    import torch

    first = next(itertools.chain(module.parameters(), module.buffers()), None)
    if first is not None:
        return first.device
    for value in (*args, *kwargs.values()):
        if isinstance(value, torch.Tensor):
            return value.device
    return torch.device("cpu")


@functools.cache
def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


@dataclass(frozen=True)
class DeviceIdentity(Record):
    """What a timing depends on besides the workload: device model, torch, threads (on the
    CPU, those it is timed on)."""

    kind: str
    name: str
    torch: str
    threads: int

    @property
    def slug(self) -> str:
        """The baseline directory of this identity."""
        raw = f"{self.kind}-{self.name}-torch{self.torch}-threads{self.threads}"
        return re.sub(r"[^A-Za-z0-9._+-]+", "_", raw).strip("_")

    def describe(self) -> str:
        return f"{self.kind} {self.name}, torch {self.torch}, {plural(self.threads, 'thread')}"


@functools.cache
def calibration_kernel(device: str) -> Callable[[], object]:
    """A small fixed workload timed beside every replayed one, whose speed tracks the
    machine's (docs/explanation/timing.md); a private generator leaves the global RNG alone."""
    import torch
    import torch.nn.functional as F

    generator = torch.Generator().manual_seed(0)

    def tensor(*shape: int) -> torch.Tensor:
        return torch.rand(*shape, generator=generator, dtype=torch.float32).to(device)

    image, filters, bias = tensor(1, 8, 32, 32), tensor(16, 8, 3, 3), tensor(16)
    rows, weight = tensor(64, 256), tensor(256, 256)

    def run() -> object:
        with torch.no_grad():
            return (
                F.relu(F.conv2d(image, filters, bias, padding=1)).sum()
                + torch.tanh(rows @ weight).sum()
            )

    return run


class PeakMemory:
    """Bytes a CUDA device's allocator held above what it held at :meth:`begin`, at most.
    :meth:`begin` resets the peak counter: a test that reads ``torch.cuda.max_memory_allocated``
    across a first call reads the peak since it began."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self._base = 0

    def begin(self) -> None:
        import torch

        torch.cuda.synchronize(self.device)
        torch.cuda.reset_peak_memory_stats(self.device)
        self._base = torch.cuda.memory_allocated(self.device)

    def end(self) -> int:
        import torch

        torch.cuda.synchronize(self.device)
        return max(torch.cuda.max_memory_allocated(self.device) - self._base, 0)


class Device:
    """What timing and measuring a call need from the device it runs on. This base serves a
    kind the package does not know: timed by the host's clocks, with nothing of its own."""

    kind: ClassVar[str]
    #: Whether a clock read around a call times its execution (not only its launch).
    clocked: ClassVar[bool] = False
    #: Whether ``torch.autocast`` has a mode for the kind, captured with each first call.
    autocast: ClassVar[bool] = False
    #: Why a forked process cannot run a call on the kind (None: it can).
    unforkable: ClassVar[str | None] = None
    #: The intra-op threads :meth:`timing` runs on (None: torch's count, as it is).
    threads: ClassVar[int | None] = None
    #: How far the calibration kernel's time may move from its baseline's, either way, before
    #: two timings are not compared (None: no limit).
    kernel_limit: ClassVar[float | None] = None

    def __init__(self, device: torch.device) -> None:
        self.device = device

    def lap(self, fn: Callable[[], object], number: int) -> Lap:
        return cpu_lap(fn, number)

    @contextmanager
    def timing(self) -> Iterator[None]:
        yield

    def calibration(self) -> Callable[[], object]:
        return calibration_kernel(str(self.device))

    def peak(self) -> PeakMemory | None:
        return None

    def identity(self) -> DeviceIdentity:
        import torch

        threads = torch.get_num_threads() if self.threads is None else self.threads
        # a plain str: torch's TorchVersion cannot cross to the xdist controller
        return DeviceIdentity(self.device.type, self.name(), str(torch.__version__), threads)

    def name(self) -> str:
        return cpu_model()

    @classmethod
    def saved_rng(cls) -> Callable[[], None] | None:
        """What puts the kind's global RNG back as it is now (None: it has none to save)."""
        return None


class CpuDevice(Device):
    kind = "cpu"
    clocked = True
    autocast = True
    #: whatever torch's default here: docs/explanation/timing.md, "On one intra-op thread"
    threads: ClassVar[int] = 1
    #: one machine's phases and loads move the kernel's CPU time by tens of percent
    kernel_limit = 3.0

    @contextmanager
    def timing(self) -> Iterator[None]:
        import torch

        pin_allocator()
        before = torch.get_num_threads()
        torch.set_num_threads(self.threads)
        try:
            yield
        finally:
            torch.set_num_threads(before)

    @classmethod
    def saved_rng(cls) -> Callable[[], None]:
        import torch

        state = torch.get_rng_state()
        return lambda: torch.set_rng_state(state)


class CudaDevice(Device):
    kind = "cuda"
    autocast = True
    unforkable = "a forked process cannot use CUDA"

    def lap(self, fn: Callable[[], object], number: int) -> Lap:
        import torch

        with torch.cuda.device(self.device):
            torch.cuda.synchronize()
            start = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            start.record()
            for _ in range(number):
                fn()
            end.record()
            end.synchronize()
            elapsed = float(start.elapsed_time(end)) / 1e3
            return Lap(elapsed, elapsed)

    def peak(self) -> PeakMemory:
        return PeakMemory(self.device)

    def name(self) -> str:
        import torch

        return torch.cuda.get_device_name(self.device)

    @classmethod
    def saved_rng(cls) -> Callable[[], None] | None:
        import torch

        if not torch.cuda.is_initialized():  # type: ignore[no-untyped-call]
            return None
        states = torch.cuda.get_rng_state_all()
        return lambda: torch.cuda.set_rng_state_all(states)


class MpsDevice(Device):
    kind = "mps"

    def lap(self, fn: Callable[[], object], number: int) -> Lap:
        import torch

        torch.mps.synchronize()
        start = time.perf_counter_ns()
        for _ in range(number):
            fn()
        torch.mps.synchronize()
        elapsed = (time.perf_counter_ns() - start) / 1e9
        return Lap(elapsed, elapsed)

    def name(self) -> str:
        return f"Apple GPU ({platform.machine()})"


KINDS: Final = (CpuDevice, CudaDevice, MpsDevice)
#: Each known kind's implementation by ``torch.device.type``; :func:`substituted` replaces one.
_IMPLEMENTATIONS: dict[str, Callable[[torch.device], Device]] = {k.kind: k for k in KINDS}


def device_for(device: torch.device | str) -> Device:
    import torch

    device = torch.device(device)
    return _IMPLEMENTATIONS.get(device.type, Device)(device)


@contextmanager
def substituted(kind: str, implementation: Callable[[torch.device], Device]) -> Iterator[None]:
    """In the block, ``implementation`` makes the :class:`Device` of every ``kind`` device."""
    before = _IMPLEMENTATIONS[kind]
    _IMPLEMENTATIONS[kind] = implementation
    try:
        yield
    finally:
        _IMPLEMENTATIONS[kind] = before


def environment(device: torch.device) -> dict[str, Json]:
    """The JSON report's ``environment``."""
    identity = device_for(device).identity()
    return {
        "device": {"kind": identity.kind, "name": identity.name, "index": device.index},
        "torch": identity.torch,
        "threads": identity.threads,
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        # what pin_allocator did in this process (None: no CPU timing called it)
        "allocator": pin_allocator() if pin_allocator.cache_info().currsize else None,
    }
