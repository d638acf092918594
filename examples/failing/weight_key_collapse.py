"""Fails on purpose: a weight-based key gives two input shapes one cache entry (a collapse).

Run with: pytest examples/failing/weight_key_collapse.py --workload-snapshot
"""

import pytest
import timm
import torch


@pytest.mark.workloads
def test_two_shapes_one_key():
    torch.manual_seed(0)
    model = timm.create_model("mobilenetv2_035", pretrained=False).eval()
    with torch.no_grad():
        model(torch.rand(1, 3, 28, 28))
        model(torch.rand(1, 3, 224, 224))
