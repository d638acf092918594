"""Helpers for the recorder's tests."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.modules import module as torch_module

from pytest_workload import TestWorkloads, WorkloadRecorder
from pytest_workload._fingerprint.structure import CURRENT_SCHEME
from tests.models import TinyNet


def no_hooks_left(*modules: nn.Module) -> bool:
    """No module hook left on ``modules`` and no global one."""
    globals_empty = not (
        torch_module._global_forward_pre_hooks or torch_module._global_forward_hooks
    )
    return globals_empty and all(
        not m._forward_pre_hooks and not m._forward_hooks for top in modules for m in top.modules()
    )


def record(fn, *, max_depth=0, timing=True, scheme=CURRENT_SCHEME) -> TestWorkloads:
    """The workloads of ``fn()`` recorded with every root watched."""
    recorder = WorkloadRecorder("t", max_depth=max_depth, timing=timing, scheme=scheme)
    with recorder.recording(all_roots=True):
        fn()
    assert recorder.errors == ()
    return recorder.workloads()


def tiny_table(nodeid: str, size: int) -> TestWorkloads:
    """One test's workloads: a TinyNet in eval mode called once on a ``size``² image."""
    recorder = WorkloadRecorder(nodeid)
    model = TinyNet().eval()
    with recorder.recording(all_roots=True):
        model(torch.rand(1, 3, size, size))
    return recorder.workloads()
