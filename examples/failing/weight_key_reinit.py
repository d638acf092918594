"""Fails on purpose: a weight-based key changes when the weights are re-initialised, so a
lookup for the same workload misses ("model hash not found"): an unstable key.

Run with: pytest examples/failing/weight_key_reinit.py --workload-snapshot
"""

import pytest
import timm
import torch


def build(seed):
    torch.manual_seed(seed)
    return timm.create_model("mobilenetv2_035", pretrained=False).eval()


@pytest.mark.workloads
def test_reinitialised_weights_change_the_key():
    x = torch.rand(1, 3, 28, 28)
    with torch.no_grad():
        build(0)(x)
        build(1)(x)
