"""How much of a call does the compute hash cover, and does it hold across data and weights?

The compute hash covers a call's operations up to its first data-dependent event (a value
read into Python, an operation whose output shape the values set, on a tensor that may carry
data). For each model (Hugging Face tiny configurations as in transformers' own tests,
torchvision classification and detection models, built without pretrained weights), one
recorded call per seed, each seed with other weights and other unseeded-style random inputs:

* **covered / ops**: the operations the hash covers, of those the call ran (first seed);
* **stops at**: the operation it stops at, and in which module;
* **hashes**: distinct compute hashes across the seeds (1 = an unchanged model never fails
  because its data or weights changed).

Run: ``python benchmarks/compute_coverage.py [--seeds N]``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import markdown_table, print_header

from pytest_workload import WorkloadRecorder


def _hf(name: str) -> Callable[[], tuple[Any, Callable[[], dict[str, Any]]]]:
    def build() -> tuple[Any, Callable[[], dict[str, Any]]]:
        import transformers as tf

        small = {"vocab_size": 99, "hidden_size": 32, "num_attention_heads": 4,
                 "intermediate_size": 37, "max_position_embeddings": 64}  # fmt: skip
        config, cls = {
            "bert": (tf.BertConfig(num_hidden_layers=2, **small), tf.BertModel),
            "gpt2": (tf.GPT2Config(vocab_size=99, n_embd=32, n_layer=2, n_head=4), tf.GPT2Model),
            "llama": (
                tf.LlamaConfig(num_hidden_layers=2, num_key_value_heads=2, **small),
                tf.LlamaModel,
            ),
            "t5": (
                tf.T5Config(vocab_size=99, d_model=32, d_kv=8, d_ff=37, num_layers=2, num_heads=4),
                tf.T5Model,
            ),
        }[name]
        model = cls(config).eval()

        def inputs() -> dict[str, Any]:
            ids = torch.randint(0, 99, (2, 7))
            mask = torch.ones(2, 7, dtype=torch.long)
            extra = {"decoder_input_ids": ids} if name == "t5" else {}
            return {"input_ids": ids, "attention_mask": mask, **extra}

        return model, inputs

    return build


def _vision(name: str, detection: bool) -> Callable[[], tuple[Any, Callable[[], dict[str, Any]]]]:
    def build() -> tuple[Any, Callable[[], dict[str, Any]]]:
        import torchvision

        if detection:
            model = getattr(torchvision.models.detection, name)(weights=None, weights_backbone=None)
            return model.eval(), lambda: {"images": [torch.rand(3, 320, 320)]}
        model = getattr(torchvision.models, name)(weights=None)
        return model.eval(), lambda: {"x": torch.rand(1, 3, 224, 224)}

    return build


MODELS = {
    "bert (HF tiny)": _hf("bert"),
    "gpt2 (HF tiny)": _hf("gpt2"),
    "llama (HF tiny)": _hf("llama"),
    "t5 (HF tiny)": _hf("t5"),
    "resnet18": _vision("resnet18", False),
    "vit_b_16": _vision("vit_b_16", False),
    "fasterrcnn_mobilenet_v3_large_320_fpn": _vision("fasterrcnn_mobilenet_v3_large_320_fpn", True),
    "ssdlite320_mobilenet_v3_large": _vision("ssdlite320_mobilenet_v3_large", True),
    "retinanet_resnet50_fpn": _vision("retinanet_resnet50_fpn", True),
}


def _record(model: Any, kwargs: dict[str, Any]) -> Any:
    recorder = WorkloadRecorder("coverage", timing=False)
    with recorder.recording(all_roots=True), torch.no_grad():
        model(**kwargs)
    recorder.measure(None)
    return recorder.workloads().workloads[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    options = parser.parse_args()
    print_header("compute hash coverage")
    rows = []
    for label, build in MODELS.items():
        hashes, first = set(), None
        for seed in range(options.seeds):
            torch.manual_seed(seed)
            model, inputs = build()
            workload = _record(model, inputs())
            hashes.add(workload.compute_hash)
            first = first or workload
        computation = first.computation
        covered, ops = len(computation.flat), computation.ops
        stop = computation.flat[-1].partition("(")[0] if computation.partial else "-"
        where = f"{stop} in {computation.stop or 'the root'}" if computation.partial else "-"
        rows.append([label, f"{covered:,} / {ops:,} ({covered / ops:.0%})", where, len(hashes)])
    print(markdown_table(["model", "covered / ops", "stops at", "hashes"], rows))


if __name__ == "__main__":
    main()
