"""The device workloads run on, and the identity a timing baseline belongs to."""

from __future__ import annotations

import os
import platform
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Final

from .._core.errors import DeviceUnavailableError
from .._core.strict_json import Json, read_field, read_object
from .stopwatch import pin_allocator

if TYPE_CHECKING:
    import torch


DEVICE_CHOICES: Final = "auto, cpu, cuda, cuda:N or mps"
_SPEC: Final = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")


def check_device_spec(spec: str) -> str:
    """Validate the form of a device option value (without importing torch)."""
    if not _SPEC.match(spec):
        raise DeviceUnavailableError(f"unknown workload device {spec!r}: use {DEVICE_CHOICES}")
    return spec


def resolve_device(spec: str) -> torch.device:
    """``auto`` is CUDA if available, else MPS, else CPU; others must exist here."""
    import torch

    check_device_spec(spec)
    if spec == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    device = torch.device(spec)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise DeviceUnavailableError(
                f"workload device {spec!r} asked for, but CUDA is not available"
            )
        count = torch.cuda.device_count()
        if device.index is not None and device.index >= count:
            raise DeviceUnavailableError(
                f"workload device {spec!r} asked for, but this machine has {count} CUDA device(s)"
            )
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise DeviceUnavailableError(
            f"workload device {spec!r} asked for, but MPS is not available"
        )
    return device


#: The intra-op threads a CPU workload is timed on, whatever torch's default here. On one
#: thread, all of a forward's compute is on the ratio clock (the thread's own CPU time), and no
#: thread waits at a barrier for a sibling without a core, so neither load nor the machine's
#: core count moves it (docs/explanation/timing.md).
TIMING_THREADS: Final = 1


@contextmanager
def timing_threads() -> Iterator[int]:
    """Run the block on ``TIMING_THREADS`` intra-op threads (torch's count is back after);
    gives the count."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(TIMING_THREADS)
    try:
        yield TIMING_THREADS
    finally:
        torch.set_num_threads(before)


@cache
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
class DeviceIdentity:
    """What a timing depends on besides the workload: device model, torch, threads (on the
    CPU, those it is timed on)."""

    kind: str
    name: str
    torch: str
    threads: int

    @property
    def slug(self) -> str:
        """A file-name-safe form, used as the baseline directory of this identity."""
        raw = f"{self.kind}-{self.name}-torch{self.torch}-threads{self.threads}"
        return re.sub(r"[^A-Za-z0-9._+-]+", "_", raw).strip("_")

    def describe(self) -> str:
        threads = f"{self.threads} thread{'' if self.threads == 1 else 's'}"
        return f"{self.kind} {self.name}, torch {self.torch}, {threads}"

    def to_dict(self) -> dict[str, Json]:
        return {"kind": self.kind, "name": self.name, "torch": self.torch, "threads": self.threads}

    @classmethod
    def from_dict(cls, data: object) -> DeviceIdentity:
        d = read_object(data, "device")
        return cls(
            kind=read_field(d, "kind", str),
            name=read_field(d, "name", str),
            torch=read_field(d, "torch", str),
            threads=read_field(d, "threads", int),
        )


def device_identity(device: torch.device) -> DeviceIdentity:
    import torch

    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
    elif device.type == "mps":
        name = f"Apple GPU ({platform.machine()})"
    else:
        name = cpu_model()
    # a CPU workload is timed on TIMING_THREADS, whatever torch's default here
    threads = TIMING_THREADS if device.type == "cpu" else torch.get_num_threads()
    # a plain str: torch's TorchVersion cannot cross to the xdist controller
    return DeviceIdentity(device.type, name, str(torch.__version__), threads)


def environment(device: torch.device) -> dict[str, Json]:
    """The JSON report's ``environment``: where the numbers in it were measured."""
    identity = device_identity(device)
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
