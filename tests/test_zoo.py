"""The fidelity sweep: timm architectures x input shapes x dtypes through the pure core.

Every architecture is recorded at ``max_depth=1`` with three input shapes in float32 and in
bfloat16. Across the sweep no hash may stand for two workloads, a module's distinct signatures
must get distinct hashes, and neither weights, seeds nor the process's ``PYTHONHASHSEED`` may
change a hash. Models are tiny variants, built with ``pretrained=False``.

Run as ``python -m tests.test_zoo ARCH...`` it prints the sweep's hashes as JSON, which is how
the cross-process test gets a second opinion.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import timm
import torch
from torch import nn

from pytest_workload import TestWorkloads, Workload, WorkloadRecorder
from pytest_workload._core.text import prefix_length
from pytest_workload._report.summary import render_session
from pytest_workload._workload.signature import InputSignature
from pytest_workload._workload.workload import ParamStats

pytestmark = pytest.mark.zoo

_DYNAMIC = {"dynamic_img_size": True}

#: Architecture -> extra ``create_model`` arguments. Transformers take every sweep size.
ARCHS: dict[str, dict[str, object]] = {
    # CNNs
    "resnet10t": {},
    "resnet18d": {},
    "skresnet18": {},
    "resnest14d": {},
    "regnetx_002": {},
    "regnety_002": {},
    "regnetz_b16": {},
    "convnext_atto": {},
    "efficientnet_b0": {},
    "tinynet_e": {},
    "densenet121": {},
    "dla46_c": {},
    "dpn48b": {},
    "repvgg_a0": {},
    "ese_vovnet19b_slim_dw": {},
    "cs3darknet_focus_s": {},
    "hrnet_w18_small": {},
    "nf_regnet_b0": {},
    "hgnetv2_b0": {},
    "inception_next_atto": {},
    "fasternet_t0": {},
    "starnet_s050": {},
    "mambaout_femto": {},
    "poolformerv2_s12": {},
    # mobile nets
    "mobilenetv2_035": {},
    "mobilenetv3_small_050": {},
    "mobilenetv4_conv_small": {},
    "ghostnet_050": {},
    "ghostnetv2_100": {},
    "lcnet_035": {},
    "mnasnet_small": {},
    "fbnetc_100": {},
    "repghostnet_050": {},
    "hardcorenas_a": {},
    "mixnet_s": {},
    "rexnet_100": {},
    "mobileone_s0": {},
    # transformers and hybrids
    "vit_tiny_patch16_224": _DYNAMIC,
    "deit_tiny_distilled_patch16_224": _DYNAMIC,
    "vit_tiny_r_s16_p8_224": _DYNAMIC,
    "mobilevit_xxs": {},
    "mobilevitv2_050": {},
    "efficientvit_b0": {},
    "efficientvit_m0": {},
    "edgenext_xx_small": {},
    "fastvit_t8": {},
    "pvt_v2_b0": {},
    "tiny_vit_5m_224": {},
}

#: Sizes every architecture above accepts (16, the ViT patch, divides them).
SHAPES = ((1, 3, 64, 64), (1, 3, 96, 96), (2, 3, 64, 64))
DTYPES = (torch.float32, torch.bfloat16)

#: Other names of architectures above (other pretrained weights, one structure): name -> arch.
ALIASES = {"deit_tiny_patch16_224": "vit_tiny_patch16_224"}

#: Hash seeds of the two other processes; neither is this process's.
HASH_SEEDS = ("0", "3141592653")

#: What the other processes sweep: every family, at a fraction of the whole sweep's cost.
CROSS_PROCESS = (
    "resnet10t",
    "regnety_002",
    "convnext_atto",
    "efficientnet_b0",
    "densenet121",
    "hrnet_w18_small",
    "mobilenetv3_small_050",
    "ghostnet_050",
    "mixnet_s",
    "vit_tiny_patch16_224",
    "deit_tiny_distilled_patch16_224",
    "mobilevit_xxs",
    "efficientvit_m0",
    "tiny_vit_5m_224",
)


@dataclass(frozen=True)
class Case:
    """One recorded call: architecture, input shape, dtype."""

    arch: str
    shape: tuple[int, ...]
    dtype: torch.dtype

    def __str__(self) -> str:
        dims = "x".join(map(str, self.shape))
        return f"{self.arch} {dims} {str(self.dtype).removeprefix('torch.')}"


Sweep = dict[Case, TestWorkloads]


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Tiny models gain nothing from two intra-op threads, and two threads on two shared
    cores (another job, or ``-n 2``) oversubscribe the pool: 30x slower, measured."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def build(arch: str, seed: int, reinit: bool = False) -> nn.Module:
    torch.manual_seed(seed)
    options = ARCHS[ALIASES.get(arch, arch)]
    model = timm.create_model(arch, pretrained=False, **options).eval()
    if reinit:
        with torch.no_grad():
            for p in model.parameters():
                nn.init.normal_(p, mean=0.5, std=2.0)
            for b in model.buffers():
                if b.is_floating_point():
                    b.uniform_(1.0, 3.0)
    return model


def record(model: nn.Module, case: Case) -> TestWorkloads:
    recorder = WorkloadRecorder(str(case), max_depth=1, timing=False)
    x = torch.rand(case.shape).to(case.dtype)
    with torch.no_grad(), recorder.recording(all_roots=True):
        model(x)
    assert not recorder.errors, (str(case), recorder.errors)
    return recorder.workloads()


def sweep_arch(arch: str, seed: int = 0, reinit: bool = False) -> Sweep:
    """Every shape and dtype of one architecture, built once (float32, then converted)."""
    model = build(arch, seed, reinit)
    out: Sweep = {}
    with one_thread():
        for dtype in DTYPES:
            model.to(dtype)
            for shape in SHAPES:
                case = Case(arch, shape, dtype)
                out[case] = record(model, case)
    return out


def sweep(archs: Iterable[str]) -> Sweep:
    return {case: w for arch in archs for case, w in sweep_arch(arch).items()}


def rows(workloads: TestWorkloads) -> list[list[object]]:
    """What a hash check compares: each workload's place, hash, caller and compute hash."""
    return [[w.name, w.depth, w.hash, w.parent, w.compute_hash] for w in workloads]


def hash_table(result: Sweep) -> dict[str, list[list[object]]]:
    return {str(case): rows(w) for case, w in result.items()}


def identity(w: Workload) -> tuple[str, str, str | None]:
    """What a workload hash stands for: its structure and signature, and what they ran (a
    hash standing for two computations is a collision too)."""
    return w.structure_hash, w.input_signature.canonical, w.compute_hash


def sightings(result: Sweep) -> Iterator[tuple[Case, Workload]]:
    for case, workloads in result.items():
        for w in workloads:
            yield case, w


def all_hashes(result: Sweep) -> set[str]:
    return {w.hash for _, w in sightings(result)}


@pytest.fixture(scope="module")
def zoo() -> Sweep:
    return sweep(ARCHS)


@pytest.fixture(scope="module", params=list(ARCHS))
def arch(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(scope="module")
def reseeded(arch: str) -> Sweep:
    return sweep_arch(arch, seed=1, reinit=True)


def of_arch(result: Sweep, arch: str) -> Sweep:
    return {case: w for case, w in result.items() if case.arch == arch}


# -- the sweep recorded what ran ---------------------------------------------------------------


def test_each_call_is_one_root_with_its_input_and_children(zoo, arch):
    for case, workloads in of_arch(zoo, arch).items():
        (root,) = workloads.roots()
        expected = {"tensor": list(case.shape), "dtype": str(case.dtype).removeprefix("torch.")}
        assert root.input_signature.args == (expected,), str(case)
        assert workloads.children(root), f"{case}: no depth-1 workload recorded"
        assert {w.depth for w in workloads} == {0, 1}, str(case)


def test_every_workload_has_a_stable_compute_hash(zoo, arch):
    for case, w in sightings(of_arch(zoo, arch)):
        assert w.compute_hash is not None, f"{case} {w.name}: {w.compute_unknown}"
        assert not w.data_dependent, f"{case} {w.name}"


# -- no collisions -----------------------------------------------------------------------------


def collisions(found: Iterable[tuple[Case, Workload]]) -> list[str]:
    """One line per hash that stands for more than one (structure, signature)."""
    seen: dict[str, dict[tuple[str, str], str]] = defaultdict(dict)
    for case, w in found:
        seen[w.hash].setdefault(identity(w), f"{case}: {w.name} {w.input_signature.format()}")
    return [f"{h[:16]}: {' | '.join(sorted(d.values()))}" for h, d in seen.items() if len(d) > 1]


def test_no_hash_stands_for_two_workloads_across_the_sweep(zoo):
    found = collisions(sightings(zoo))
    assert not found, f"{len(found)} hash collisions:\n" + "\n".join(found[:10])


def test_distinct_signatures_of_a_module_get_distinct_hashes(zoo, arch):
    by_module: dict[str, list[tuple[Case, Workload]]] = defaultdict(list)
    for case, w in sightings(of_arch(zoo, arch)):
        by_module[w.name if w.depth else "root"].append((case, w))
    for name, found in by_module.items():
        hashes: dict[tuple[str, str], set[str]] = defaultdict(set)
        for _, w in found:
            hashes[identity(w)].add(w.hash)
        unstable = [sig for (_, sig, _), h in hashes.items() if len(h) != 1]
        assert not unstable, f"{arch} {name}: one workload got several hashes: {unstable}"
        shared = collisions(found)
        assert not shared, f"{arch} {name}: signatures share a hash:\n" + "\n".join(shared)


def test_root_workloads_of_every_arch_shape_and_dtype_are_distinct(zoo):
    owner: dict[str, str] = {}
    for case, workloads in zoo.items():
        (root,) = workloads.roots()
        assert root.hash not in owner, f"{case} and {owner[root.hash]} share {root.hash}"
        owner[root.hash] = str(case)
    assert len(owner) == len(ARCHS) * len(SHAPES) * len(DTYPES)


def test_architectures_have_distinct_structures(zoo):
    owners: dict[str, set[str]] = defaultdict(set)
    for case, workloads in zoo.items():
        (root,) = workloads.roots()
        owners[root.structure_hash].add(f"{case.arch} {case.dtype}")
    shared = [sorted(o) for o in owners.values() if len(o) > 1]
    assert not shared, f"one structure hash for {shared}"
    assert len(owners) == len(ARCHS) * len(DTYPES)


# -- what must not change a hash ---------------------------------------------------------------


def test_another_seed_and_reinitialised_weights_change_no_hash(zoo, arch, reseeded):
    for case, workloads in of_arch(zoo, arch).items():
        assert rows(reseeded[case]) == rows(workloads), str(case)


@pytest.mark.parametrize(("alias", "original"), ALIASES.items())
def test_two_names_of_one_architecture_are_one_workload(zoo, alias, original):
    case = Case(original, SHAPES[0], torch.float32)
    with one_thread():
        assert rows(record(build(alias, seed=1), case)) == rows(zoo[case])


def other_process(archs: list[str], hash_seed: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    command = [sys.executable, "-m", "tests.test_zoo", *archs]
    root = Path(__file__).resolve().parents[1]
    return subprocess.Popen(command, cwd=root, env=env, stdout=subprocess.PIPE, text=True)


def test_other_processes_and_hash_seeds_give_the_same_hashes(zoo):
    processes = [other_process(list(CROSS_PROCESS), seed) for seed in HASH_SEEDS]
    outputs = [p.communicate(timeout=300)[0] for p in processes]
    assert [p.returncode for p in processes] == [0, 0]
    expected = hash_table({c: w for c, w in zoo.items() if c.arch in CROSS_PROCESS})
    for seed, output in zip(HASH_SEEDS, outputs, strict=True):
        table = json.loads(output)
        assert table.keys() == expected.keys()
        differ = [case for case in expected if table[case] != expected[case]]
        assert not differ, f"PYTHONHASHSEED={seed} changed the hashes of {differ}"


# -- display prefixes --------------------------------------------------------------------------


def expected_prefix_collisions(n: int, bits: int = 32) -> float:
    """Pairs of n uniform hashes expected to share their first ``bits`` bits."""
    return n * (n - 1) / 2 / 2**bits


def poisson_ceiling(mean: float, tail: float = 1e-9) -> int:
    """Smallest k with P(X > k) < tail for X ~ Poisson(mean)."""
    k, term, total = 0, math.exp(-mean), math.exp(-mean)
    while 1 - total >= tail:
        k += 1
        term *= mean / k
        total += term
    return k


def test_8_hex_prefix_collisions_match_the_birthday_bound(zoo, record_property):
    hashes = all_hashes(zoo)
    by_prefix: dict[str, int] = defaultdict(int)
    for h in hashes:
        by_prefix[h[:8]] += 1
    shared = sum(n * (n - 1) // 2 for n in by_prefix.values())
    expected = expected_prefix_collisions(len(hashes))
    record_property("zoo_distinct_workloads", len(hashes))
    record_property("zoo_8hex_prefix_collisions", shared)
    print(f"{len(hashes)} distinct hashes, {shared} share 8 hex chars (expected {expected:.2g})")
    assert shared <= poisson_ceiling(expected)


def test_prefix_length_tells_every_hash_of_the_sweep_apart(zoo):
    hashes = all_hashes(zoo)
    n = prefix_length(hashes)
    assert len({h[:n] for h in hashes}) == len(hashes)
    assert n == 8 or len({h[: n - 1] for h in hashes}) < len(hashes), "prefix not minimal"


def crafted(hash_: str) -> Workload:
    signature = InputSignature(({"tensor": [1, 3, 64, 64], "dtype": "float32"},))
    return Workload(
        name="model",
        class_name="m.Net",
        depth=0,
        parent=None,
        structure_hash="0" * 64,
        input_signature=signature,
        hash=hash_,
        calls=1,
        params=ParamStats(0, 0),
    )


@pytest.mark.parametrize(
    ("hashes", "shown"),
    [
        pytest.param(("abcdef01" + "0" * 56, "abcdef01" + "1" * 56), 9, id="share-8"),
        pytest.param(("abcdef01" + "2" * 56, "abcdef01" + "2" * 10 + "3" * 46), 19, id="share-18"),
        pytest.param(("abcdef01" + "0" * 56, "abcdef02" + "0" * 56), 8, id="distinct"),
    ],
)
def test_the_report_lengthens_a_shared_prefix(hashes, shown):
    test = TestWorkloads("t.py::t", tuple(crafted(h) for h in hashes))
    lines = [line.split()[-1] for line in render_session([test]) if "Hash:" in line]
    assert lines == [h[:shown] for h in hashes]


if __name__ == "__main__":
    print(json.dumps(hash_table(sweep(sys.argv[1:]))))
