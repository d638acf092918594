"""The CUDA paths. The CUDA device's protocols (events, peak memory, RNG) are checked everywhere
with fake ``torch.cuda`` functions; the rest needs a GPU and is skipped without one (run it
where one is lent)."""

from __future__ import annotations

import itertools
from contextlib import contextmanager

import pytest
import timm
import torch
import torch.nn.functional as F
from torch import nn

from pytest_workload import WorkloadRecorder
from pytest_workload._perf.device import (
    KINDS,
    CpuDevice,
    CudaDevice,
    Device,
    MpsDevice,
    calibration_kernel,
    device_for,
    resolve_device,
)
from pytest_workload._perf.replay import isolated, replay
from pytest_workload._perf.stopwatch import Lap, TimingPolicy

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

#: No GPU clocks its SMs at 5 GHz, so ``torch.cuda._sleep(cycles)`` spins at least this long.
MAX_CLOCK_HZ = 5e9


def test_cuda_stopwatch_waits_for_the_event_after_the_calls(monkeypatch):
    log = []
    names = itertools.cycle(["start", "end"])

    class Event:
        def __init__(self, enable_timing=False):
            assert enable_timing
            self.name = next(names)

        def record(self):
            log.append(f"{self.name}.record")

        def synchronize(self):
            log.append(f"{self.name}.synchronize")

        def elapsed_time(self, end):
            log.append(f"{self.name}.elapsed_time({end.name})")
            return 1500.0  # milliseconds, as torch reports them

    @contextmanager
    def device(which):
        log.append(f"enter {which}")
        yield
        log.append(f"leave {which}")

    monkeypatch.setattr(torch.cuda, "Event", Event)
    monkeypatch.setattr(torch.cuda, "device", device)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *_: log.append("synchronize"))
    cuda = device_for(torch.device("cuda", 1))
    assert isinstance(cuda, CudaDevice)
    assert cuda.lap(lambda: log.append("call"), 2) == Lap(1.5, 1.5)
    assert log == [
        "enter cuda:1",
        "synchronize",  # earlier work is not timed
        "start.record",
        "call",
        "call",
        "end.record",
        "end.synchronize",  # the calls were only launched: wait for them
        "start.elapsed_time(end)",
        "leave cuda:1",
    ]


def test_the_cuda_peak_is_read_above_what_was_held_when_the_call_began(monkeypatch):
    log = []
    held = iter([100, 100 + 4096])
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device: log.append(f"sync {device}"))
    monkeypatch.setattr(
        torch.cuda, "reset_peak_memory_stats", lambda device: log.append(f"reset {device}")
    )
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device: next(held))
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda device: next(held))
    peak = device_for(torch.device("cuda", 1)).peak()
    peak.begin()
    log.append("call")
    assert peak.end() == 4096
    assert log == ["sync cuda:1", "reset cuda:1", "call", "sync cuda:1"]


def test_an_isolated_block_puts_an_initialised_cuda_rng_back(monkeypatch):
    states = [["seed 1"]]
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_rng_state_all", lambda: list(states[0]))
    monkeypatch.setattr(torch.cuda, "set_rng_state_all", lambda saved: states.insert(0, saved))
    with isolated(()):
        states.insert(0, ["drawn"])
    assert states[0] == ["seed 1"]


def test_each_kind_has_its_device_and_an_unknown_kind_the_host_clock():
    kinds = [type(device_for(torch.device(d))) for d in ("cpu", "cuda:1", "mps", "meta")]
    assert kinds == [CpuDevice, CudaDevice, MpsDevice, Device]
    assert [k.kind for k in KINDS if k.autocast] == ["cpu", "cuda"]
    assert [k.kind for k in KINDS if k.clocked] == ["cpu"]
    assert device_for("cuda:0").unforkable == "a forked process cannot use CUDA"
    assert device_for("meta").peak() is None and device_for("cpu").peak() is None


def test_the_calibration_kernel_is_built_on_the_device_it_calibrates(monkeypatch):
    moved = []
    real_to = torch.Tensor.to

    def to(tensor, device, *args, **kwargs):
        moved.append(device)
        return real_to(tensor, "cpu")  # no GPU here: only where it was sent is checked

    monkeypatch.setattr(torch.Tensor, "to", to)
    state = torch.random.get_rng_state()
    calibration_kernel.__wrapped__("cuda:1")()
    assert moved == ["cuda:1"] * 5
    assert torch.equal(torch.random.get_rng_state(), state)  # the global RNG is left alone


@needs_cuda
def test_auto_picks_cuda_and_names_the_gpu():
    device = resolve_device("auto")
    assert device.type == "cuda"
    identity = device_for(device).identity()
    assert identity.kind == "cuda" and identity.name == torch.cuda.get_device_name(device)


@needs_cuda
def test_cuda_events_see_a_kernel_the_host_only_launched():
    cycles = 200_000_000
    cuda = CudaDevice(torch.device("cuda"))
    cuda.lap(lambda: torch.cuda._sleep(1000), 3)  # warm-up: context and kernel loaded
    timed = cuda.lap(lambda: torch.cuda._sleep(cycles), 1).wall_s
    launched = CpuDevice(torch.device("cpu")).lap(lambda: torch.cuda._sleep(cycles), 1).wall_s
    torch.cuda.synchronize()
    assert timed >= cycles / MAX_CLOCK_HZ
    assert launched < timed  # without a synchronisation the host sees the launch alone


@needs_cuda
def test_replay_on_cuda_measures_time_and_peak_memory():
    model = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU()).cuda().eval()
    x = torch.rand(64, 1024, device="cuda")
    measured = replay(model, model, (x,), {}, TimingPolicy(budget_s=0.05))
    assert measured.problem is None
    assert measured.timed is not None and measured.timed.device.startswith("cuda")
    assert measured.timed.ratio is not None and measured.timed.calibration_s is not None
    assert measured.peak_memory_bytes is not None and measured.peak_memory_bytes > 0
    assert measured.counted == 2 * 64 * 1024 * 1024


class Attention(nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v)


@needs_cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_attention_flops_are_the_same_on_cpu_and_cuda(dtype):
    q = torch.rand(2, 4, 128, 64)
    on_cpu = replay(Attention(), Attention(), (q, q, q), {}, None)
    cuda = q.to("cuda", dtype)
    on_cuda = replay(Attention(), Attention(), (cuda, cuda, cuda), {}, None)
    assert on_cpu.counted == on_cuda.counted > 0


@needs_cuda
def test_a_vision_transformer_has_the_same_flops_on_cpu_and_cuda():
    model = timm.create_model("vit_tiny_patch16_224", pretrained=False).eval()
    x = torch.rand(1, 3, 224, 224)
    on_cpu = replay(model, model, (x,), {}, None).counted
    model.cuda()
    assert replay(model, model, (x.cuda(),), {}, None).counted == on_cpu


@needs_cuda
def test_cpu_and_cuda_calls_are_one_workload():
    model = nn.Linear(8, 8)
    recorder = WorkloadRecorder("t", timing=False)
    with recorder.recording(all_roots=True):
        model(torch.rand(2, 8))
        model.cuda()(torch.rand(2, 8, device="cuda"))
    (workload,) = recorder.workloads()
    assert workload.calls == 2
