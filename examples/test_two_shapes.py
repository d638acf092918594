"""The seed case: one model called with two input shapes is two workloads.

A tool that hashed the weights gave both calls one hash; pytest-workload hashes the structure
plus the input signature, so 1x3x28x28 and 1x3x224x224 are two workloads, executed 2x and 1x.
"""

import pytest
import timm
import torch


@pytest.fixture(scope="module")
def model():
    return timm.create_model("mobilenetv2_035", pretrained=False).eval()


@pytest.mark.workloads
def test_two_input_shapes(model):
    with torch.no_grad():
        model(torch.rand(1, 3, 28, 28))
        model(torch.rand(1, 3, 224, 224))
        model(torch.rand(1, 3, 28, 28))


def test_weights_do_not_change_the_hash(workloads):
    """Re-initialised weights are the same workload: caches keyed by it keep working."""
    torch.manual_seed(0)
    first = workloads.track(timm.create_model("mobilenetv2_035", pretrained=False).eval())
    torch.manual_seed(1)
    second = workloads.track(timm.create_model("mobilenetv2_035", pretrained=False).eval())
    x = torch.rand(1, 3, 28, 28)
    with torch.no_grad():
        first(x)
        second(x)
    (workload,) = workloads.workloads()
    assert workload.calls == 2
