"""How much of a call does the compute hash cover, where does it stop, and does it hold across
data and weights?

The compute hash covers a call's operations up to its first data-dependent event (a value
read into Python, an operation whose output shape the values set, on a tensor that may carry
data). Two sets of roots, each grouped by model family:

* **the zoo** (timm's zoo architectures as ``tests/test_zoo.py`` builds them, torchvision
  classification and detection models, Hugging Face tiny configurations as in transformers' own
  tests; all built without pretrained weights): one recorded call per seed, each seed with other
  weights and other random inputs;
* **the peer suites** of ``benchmarks/peer_suites.py`` (``--peer ROOT``): every root their tests
  record under ``--workload-record=all --workload-timing=off``, read from the suite's
  ``--workload-json`` report; torchvision's by test (classification, detection, segmentation,
  video, quantized), transformers' by model (bert, gpt2, llama, t5).

Each root's coverage is read the one way for both, from its workload (what the JSON report
holds): ``compute_partial`` for one that stops, and otherwise its costs' operation count (the
operations the hash covers, here every one):

* **covered / ops**: the operations the hash covers, of those the call ran (first seed);
* **stops at**: the operation it stops at, the module it ran in, and the line of code that ran
  it (a path inside an installed package is shown from the package, one inside a peer
  checkout from the checkout);
* **hashes** (zoo only): distinct compute hashes across the seeds (1 = an unchanged model never
  fails because its data or weights changed).

A stop at an operation that reads no tensor values (a dtype cast, a shape query) would be a
defect of the tracer; every stop the tables show must be a real read.

Run: ``python benchmarks/compute_coverage.py [--seeds N] [--family NAME ...]`` (the zoo), or
``python benchmarks/compute_coverage.py --peer ROOT [--suite NAME] [--workdir DIR]`` (the peer
suites, each run once in peer_suites.py's ``untimed`` mode).
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # (and tests.test_zoo)

from _common import markdown_table, print_header
from peer_suites import SUITES, path_with, run

from pytest_workload import Workload, WorkloadRecorder

REPO = Path(__file__).resolve().parent.parent

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


#: A peer suite's family, by the first of these its test's node id contains.
PEER_FAMILIES = {
    "torchvision": (
        ("quantized", "quantized"), ("segmentation", "segmentation"), ("video", "video"),
        ("detection", "detection"), ("rcnn", "detection"), ("", "classification"),
    ),
    "transformers": tuple((f"models/{m}/", m) for m in ("bert", "gpt2", "llama", "t5")),
}  # fmt: skip

#: ``Computation.coverage()``'s line: covered, ops, the operation, its module, its site.
_PARTIAL = re.compile(
    r"covers ([\d,]+) of ([\d,]+) operations: op [\d,]+, (.+?)(?: in (\S+))?(?: at (.+))?, "
    r"follows the data$"
)


@dataclass(frozen=True)
class Coverage:
    """What a root's compute hash covers; ``stop`` None: every operation."""

    covered: int
    ops: int
    stop: str | None = None
    module: str | None = None
    site: str | None = None


def coverage(workload: Workload) -> Coverage | None:
    """A root's coverage as its workload (and so the JSON report) holds it; None when it has
    no compute hash."""
    if workload.compute_hash is None or workload.costs is None:
        return None
    if workload.compute_partial is None:
        ops = sum(count for _, count in workload.costs.ops)
        return Coverage(ops, ops)
    found = _PARTIAL.match(workload.compute_partial)
    if found is None:
        raise SystemExit(f"{workload.name}: unread compute_partial {workload.compute_partial!r}")
    covered, ops, stop, module, site = found.groups()
    return Coverage(int(covered.replace(",", "")), int(ops.replace(",", "")), stop, module, site)


def _record(model: Any, kwargs: dict[str, Any]) -> Workload:
    recorder = WorkloadRecorder("coverage", timing=False)
    with recorder.recording(all_roots=True), torch.no_grad():
        model(**kwargs)
    recorder.measure(None)
    return recorder.workloads().workloads[0]


def _shown(site: str | None, checkouts: Iterable[Path] = ()) -> str:
    """A site inside an installed package from the package on (``timm/layers/x.py:12``), one
    inside a peer checkout from the checkout (``test/test_models.py:40``)."""
    if site is None:
        return "?"
    for marker in ("site-packages/", "dist-packages/"):
        if marker in site:
            return site.split(marker, 1)[1]
    for checkout in checkouts:
        if site.startswith(f"{checkout}/"):
            return site[len(str(checkout)) + 1 :]
    return site


def _where(found: Coverage, checkouts: Iterable[Path] = ()) -> str:
    if found.stop is None:
        return "-"
    return f"`{found.stop}` in {found.module or 'the root'} at `{_shown(found.site, checkouts)}`"


def _share(covered: int, ops: int) -> str:
    return f"{covered:,} / {ops:,} ({covered / ops:.0%})"


def _row(family: str, label: str, build: Build, seeds: int) -> list[object]:
    hashes, first = set(), None
    for seed in range(seeds):
        torch.manual_seed(seed)
        model, inputs = build()
        workload = _record(model, inputs())
        hashes.add(workload.compute_hash)
        first = first or workload
    assert first is not None
    found = coverage(first)
    if found is None:
        return [family, label, "not traced", first.compute_unknown, len(hashes)]
    return [family, label, _share(found.covered, found.ops), _where(found), len(hashes)]


def zoo(options: argparse.Namespace) -> None:
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


def _family(suite: str, nodeid: str) -> str:
    return next(family for part, family in PEER_FAMILIES[suite] if part in nodeid)


def peer(options: argparse.Namespace) -> None:
    """Every root the peer suites record, grouped by family, and each distinct stop."""
    from pytest_workload import read_report

    workdir = options.workdir or Path(tempfile.mkdtemp(prefix="coverage-peer-"))
    workdir.mkdir(parents=True, exist_ok=True)
    pythonpath = path_with(REPO, options.peer)
    #: family -> its roots' coverage (None: no compute hash)
    found: dict[str, list[Coverage | None]] = defaultdict(list)
    checkouts = []
    for name in options.suite or sorted(SUITES):
        suite = SUITES[name]
        checkout = (options.peer / suite.directory).resolve()
        checkouts.append(checkout)
        result = run(checkout, suite, "untimed", workdir, pythonpath)
        report = read_report(workdir / f"{suite.directory}-untimed.json")
        print(f"{name}: {len(result.outcomes)} tests, exit {result.code}, report in {workdir}")
        for test in report.tests:
            family = f"{name} {_family(name, test.nodeid)}"
            found[family] += (coverage(root) for root in test.roots())
    print()
    summary, stops = [], []
    for family, roots in found.items():
        traced = [c for c in roots if c is not None]
        full = [c for c in traced if c.stop is None]
        covered, ops = sum(c.covered for c in traced), sum(c.ops for c in traced)
        summary.append(
            [family, len(roots), len(roots) - len(traced), len(full), _share(covered, ops)]
        )
        by_stop: dict[str, list[Coverage]] = defaultdict(list)
        for c in traced:
            if c.stop is not None:
                by_stop[_where(c, checkouts)].append(c)
        for where, alike in sorted(by_stop.items(), key=lambda item: -len(item[1])):
            shares = [c.covered / c.ops for c in alike]
            low, high = min(shares), max(shares)
            spread = f"{low:.0%}" if f"{low:.0%}" == f"{high:.0%}" else f"{low:.0%} to {high:.0%}"
            stops.append([family, where, len(alike), spread])
    headers = ["family", "roots", "not traced", "covered in full", "covered / ops (traced roots)"]
    print(markdown_table(headers, summary))
    print()
    print(markdown_table(["family", "stops at", "roots", "covered"], stops))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--family", action="append", help="only these families (repeatable)")
    parser.add_argument("--peer", type=Path, help="the peer suites' root (as peer_suites.py's)")
    parser.add_argument("--suite", choices=sorted(SUITES), action="append")
    parser.add_argument("--workdir", type=Path, help="the peer suites' JUnit, JSON and output")
    options = parser.parse_args()
    print_header("compute hash coverage")
    if options.peer is None:
        zoo(options)
    else:
        peer(options)


if __name__ == "__main__":
    main()
