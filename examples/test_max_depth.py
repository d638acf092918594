"""Submodule workloads: with max_depth=1 every child of the model is fingerprinted too.

The `blocks` child sees 1x16x14x14 in one call and 1x16x112x112 in the other, so it has two
hashes, each linked to the model workload that called it. The classifier sees 1x1280 both
times: one hash, under each caller.
"""

import pytest
import timm
import torch


@pytest.mark.workloads(max_depth=1)
def test_blocks_get_a_hash_per_input_shape(workloads):
    model = timm.create_model("mobilenetv2_035", pretrained=False).eval()
    with torch.no_grad():
        model(torch.rand(1, 3, 28, 28))
        model(torch.rand(1, 3, 224, 224))

    recorded = workloads.workloads()
    blocks = [w for w in recorded if w.name == "blocks"]
    assert [b.input_signature.format() for b in blocks] == [
        "(float32[1, 16, 14, 14])",
        "(float32[1, 16, 112, 112])",
    ]
    assert blocks[0].hash != blocks[1].hash
    assert {b.parent for b in blocks} == {r.hash for r in recorded.roots()}
    assert len({w.hash for w in recorded if w.name == "classifier"}) == 1
