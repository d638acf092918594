"""How much of a call does the compute hash cover, where does it stop, and does it hold across
data and weights?

The compute hash covers a call's operations up to its first data-dependent event (a value
read into Python, an operation whose output shape the values set, on a tensor that may carry
data). For each root of the zoo, grouped by model family (timm's zoo architectures as
``tests/test_zoo.py`` builds them, torchvision classification and detection models, Hugging Face
tiny configurations as in transformers' own tests; all built without pretrained weights), one
recorded call per seed, each seed with other weights and other random inputs:

* **covered / ops**: the operations the hash covers, of those the call ran (first seed);
* **stops at**: the operation it stops at, the module it ran in, and the line of code that ran
  it (a path inside an installed package is shown from the package);
* **hashes**: distinct compute hashes across the seeds (1 = an unchanged model never fails
  because its data or weights changed).

A stop at an operation that reads no tensor values (a dtype cast, a shape query) would be a
defect of the tracer; every stop the table shows must be a real read.

Run: ``python benchmarks/compute_coverage.py [--seeds N] [--family NAME ...]``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # (and tests.test_zoo)

from _common import markdown_table, print_header

from pytest_workload import WorkloadRecorder

#: Builds a model and returns it with a function that draws its inputs (as keywords).
Build = Callable[[], tuple[Any, Callable[[], dict[str, Any]]]]


def _hf(name: str) -> Build:
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


def _vision(name: str, detection: bool) -> Build:
    def build() -> tuple[Any, Callable[[], dict[str, Any]]]:
        import torchvision

        if detection:
            model = getattr(torchvision.models.detection, name)(weights=None, weights_backbone=None)
            return model.eval(), lambda: {"images": [torch.rand(3, 320, 320)]}
        model = getattr(torchvision.models, name)(weights=None)
        return model.eval(), lambda: {"x": torch.rand(1, 3, 224, 224)}

    return build


def _timm(arch: str) -> Build:
    def build() -> tuple[Any, Callable[[], dict[str, Any]]]:
        import timm

        from tests.test_zoo import ARCHS

        model = timm.create_model(arch, pretrained=False, **ARCHS[arch]).eval()
        return model, lambda: {"x": torch.rand(1, 3, 64, 64)}

    return build


def _timm_family(first: str, last: str) -> dict[str, Build]:
    """The zoo's architectures from ``first`` to ``last``, in the zoo's order."""
    from tests.test_zoo import ARCHS

    names = list(ARCHS)
    return {name: _timm(name) for name in names[names.index(first) : names.index(last) + 1]}


def families() -> dict[str, dict[str, Build]]:
    """Model family -> model -> how to build it and draw its inputs."""
    vision = (
        "resnet18", "mobilenet_v3_small", "efficientnet_b0", "convnext_tiny", "regnet_y_400mf",
        "shufflenet_v2_x0_5", "squeezenet1_0", "densenet121", "swin_t", "vit_b_16",
    )  # fmt: skip
    detection = (
        "fasterrcnn_mobilenet_v3_large_320_fpn", "ssdlite320_mobilenet_v3_large",
        "retinanet_resnet50_fpn",
    )  # fmt: skip
    return {
        "timm CNNs": _timm_family("resnet10t", "poolformerv2_s12"),
        "timm mobile nets": _timm_family("mobilenetv2_035", "mobileone_s0"),
        "timm transformers and hybrids": _timm_family("vit_tiny_patch16_224", "tiny_vit_5m_224"),
        "torchvision classification": {name: _vision(name, False) for name in vision},
        "torchvision detection": {name: _vision(name, True) for name in detection},
        "transformers (tiny configurations)": {
            name: _hf(name) for name in ("bert", "gpt2", "llama", "t5")
        },
    }


def _record(model: Any, kwargs: dict[str, Any]) -> Any:
    recorder = WorkloadRecorder("coverage", timing=False)
    with recorder.recording(all_roots=True), torch.no_grad():
        model(**kwargs)
    recorder.measure(None)
    return recorder.workloads().workloads[0]


def _shown(site: str | None) -> str:
    """A site inside an installed package from the package on (``timm/layers/x.py:12``)."""
    if site is None:
        return "?"
    for marker in ("site-packages/", "dist-packages/"):
        if marker in site:
            return site.split(marker, 1)[1]
    return site


def _row(family: str, label: str, build: Build, seeds: int) -> list[object]:
    hashes, first = set(), None
    for seed in range(seeds):
        torch.manual_seed(seed)
        model, inputs = build()
        workload = _record(model, inputs())
        hashes.add(workload.compute_hash)
        first = first or workload
    computation = first.computation
    covered, ops = len(computation.flat), computation.ops
    where = "-"
    if computation.partial:
        stop = computation.flat[-1].partition("(")[0]
        where = f"`{stop}` in {computation.stop or 'the root'} at `{_shown(computation.site)}`"
    return [family, label, f"{covered:,} / {ops:,} ({covered / ops:.0%})", where, len(hashes)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--family", action="append", help="only these families (repeatable)")
    options = parser.parse_args()
    print_header("compute hash coverage")
    rows, summary = [], []
    for family, models in families().items():
        if options.family and family not in options.family:
            continue
        found = [_row(family, label, build, options.seeds) for label, build in models.items()]
        rows += found
        full = sum(1 for row in found if row[3] == "-")
        steady = sum(1 for row in found if row[4] == 1)
        summary.append([family, len(found), full, steady])
    print(markdown_table(["family", "roots", "covered in full", "one hash across seeds"], summary))
    print()
    print(markdown_table(["family", "model", "covered / ops", "stops at", "hashes"], rows))


if __name__ == "__main__":
    main()
