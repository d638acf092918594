"""The CUDA paths, for real. Skipped on machines without a GPU (run them where one is lent)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from pytest_workload import WorkloadRecorder
from pytest_workload.device import device_identity, resolve_device
from pytest_workload.replay import replay
from pytest_workload.timing import CudaStopwatch, TimingPolicy, stopwatch_for

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def test_auto_picks_cuda_and_names_the_gpu():
    device = resolve_device("auto")
    assert device.type == "cuda"
    identity = device_identity(device)
    assert identity.kind == "cuda" and identity.name == torch.cuda.get_device_name(device)


def test_cuda_is_timed_with_events():
    assert isinstance(stopwatch_for(torch.device("cuda")), CudaStopwatch)
    a = torch.rand(2048, 2048, device="cuda")
    stopwatch = CudaStopwatch(torch.device("cuda"))
    one = stopwatch(lambda: a @ a, 1)
    ten = stopwatch(lambda: a @ a, 10)
    assert one > 0 and ten > 5 * one  # asynchronous launches are waited for


def test_replay_on_cuda_measures_time_and_peak_memory():
    model = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU()).cuda().eval()
    x = torch.rand(64, 1024, device="cuda")
    measured = replay(model, model, (x,), {}, TimingPolicy(budget_s=0.05))
    assert measured.problem is None
    assert measured.timing is not None and measured.timing.device.startswith("cuda")
    assert measured.peak_memory_bytes is not None and measured.peak_memory_bytes > 0
    assert measured.flops == 2 * 64 * 1024 * 1024


def test_cpu_and_cuda_calls_are_one_workload():
    model = nn.Linear(8, 8)
    recorder = WorkloadRecorder("t", timing=False)
    with recorder.recording(all_roots=True):
        model(torch.rand(2, 8))
        model.cuda()(torch.rand(2, 8, device="cuda"))
    (workload,) = recorder.workloads()
    assert workload.calls == 2
