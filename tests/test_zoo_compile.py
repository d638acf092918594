"""Compile health on models people compile, built with ``pretrained=False``: timm's
mobilenetv2_035, resnet18 and a ViT, GPT-2 (a tiny config) decoding with a KV cache. Each
test resets dynamo itself first, as a test that compiles a class another test compiled must
for its compile to be observed."""

from __future__ import annotations

from pathlib import Path

import pytest
import timm
import torch
from torch import nn

from pytest_workload import WorkloadRecorder
from pytest_workload._compile.health import CompileHealth, health_changes

pytestmark = pytest.mark.zoo

ROOT = Path(__file__).resolve().parent.parent


def roots_health(model: nn.Module, *calls) -> list[CompileHealth | None]:
    recorder = WorkloadRecorder("zoo", rootdir=ROOT)
    with torch.no_grad(), recorder.recording(all_roots=False):
        recorder.track(model)
        for call in calls:
            call()
    return [w.compile_health for w in recorder.workloads() if w.depth == 0]


def compiled(arch: str, backend: str) -> nn.Module:
    torch._dynamo.reset()
    return torch.compile(timm.create_model(arch, pretrained=False).eval(), backend=backend)


@pytest.mark.parametrize(
    ("arch", "backend"),
    [("mobilenetv2_035", "eager"), ("resnet18", "aot_eager"), ("vit_tiny_patch16_224", "eager")],
)
def test_timm_models_run_as_one_graph(arch: str, backend: str):
    model = compiled(arch, backend)
    x = torch.rand(1, 3, 224, 224)
    assert roots_health(model, lambda: model(x), lambda: model(x)) == [CompileHealth(graphs=1)]


class LoudReLU(nn.ReLU):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        print("activation")  # the injected break
        return super().forward(x)


def test_a_print_injected_into_resnet18_fails_at_its_line():
    model = compiled("resnet18", "eager")
    model._orig_mod.layer1[0].act1 = LoudReLU()
    [health] = roots_health(model, lambda: model(torch.rand(1, 3, 224, 224)))
    assert health is not None
    # (one break per frame dynamo compiles through it; the blocks share one forward, whose
    # guard on act1's type then fails for the others: a recompile in timm's code)
    grew, lines = zip(*health_changes(CompileHealth(graphs=1), health), strict=True)
    assert any(grew)
    at = LoudReLU.forward.__code__.co_firstlineno + 1
    assert f"new break at tests/test_zoo_compile.py:{at} in forward " in lines[0]
    assert "(Failed to trace builtin operator [GB0059]" in lines[0]


def test_gpt2_decoding_with_a_kv_cache_recompiles_in_transformers_code():
    from transformers import GPT2Config, GPT2LMHeadModel

    torch._dynamo.reset()
    config = GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=100, n_positions=64)
    model = torch.compile(GPT2LMHeadModel(config).eval(), backend="eager")
    ids = torch.randint(0, 100, (1, 8))
    cache = {}

    def prefill() -> None:
        cache["past"] = model(input_ids=ids, use_cache=True).past_key_values

    def decode() -> None:
        model(input_ids=ids[:, :1], past_key_values=cache["past"], use_cache=True)

    prefilled, *decoded = roots_health(model, prefill, decode, decode)
    assert prefilled == CompileHealth(graphs=1)
    assert len(decoded) == 2
    for health in decoded:
        assert health is not None and health.whole_graph
        [recompile] = health.recompiles
        # (a library's site is relative to its site-packages: the same on every machine)
        assert recompile.site.startswith("transformers/")
