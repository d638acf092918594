"""Which hashes move when torch, torchvision and timm move, and why.

Builds one virtual environment per library set under ``--workdir`` (kept between runs: a set
already installed is not installed again), installs nothing of this package there (it runs
from this source tree through ``PYTHONPATH``), and records, in each environment and in the
current one, every depth-1 workload of about ten models: torch.nn built-ins, torchvision and
timm models built with random weights. Printed per model and environment: how many workloads
keep their structure hash and their compute hash against the current
environment, and for every change the module fields that differ (for the structure hashes)
or the first operation that differs (for the compute hash). The current environment is also
run with ``TIMM_FUSED_ATTN=0`` (another attention kernel, the same architecture).

Run: ``python benchmarks/cross_version.py [--workdir DIR] [--models a,b] [--quick]``.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from _common import markdown_table, print_header

ROOT = Path(__file__).resolve().parent.parent

#: name -> the pip requirements of that environment (None: the interpreter running this).
ENVIRONMENTS: dict[str, list[str] | None] = {
    "torch-2.9.1": ["torch==2.9.1", "torchvision==0.24.1", "timm==1.0.20"],
    "torch-2.12.1": ["torch==2.12.1", "torchvision==0.27.1", "timm==1.0.26"],
    "current": None,
}
#: the package's own run-time requirements, installed beside the libraries under test
RUNTIME = ["numpy", "pytest", "pluggy", "syrupy"]


def _builtin_models() -> dict[str, Callable[[], tuple[Any, tuple[Any, ...]]]]:
    import torch
    from torch import nn

    def conv_bn() -> tuple[Any, tuple[Any, ...]]:
        model = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1),
            nn.BatchNorm2d(8),
            nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(8, 4),
        )
        return model, (torch.randn(2, 3, 16, 16),)

    def ln_mlp() -> tuple[Any, tuple[Any, ...]]:
        model = nn.Sequential(
            nn.Linear(16, 32), nn.LayerNorm(32), nn.GELU(), nn.Dropout(0.1), nn.Linear(32, 16)
        )
        return model, (torch.randn(2, 16),)

    def encoder_layer() -> tuple[Any, tuple[Any, ...]]:
        model = nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, batch_first=True)
        return model, (torch.randn(2, 5, 32),)

    return {"nn conv-bn": conv_bn, "nn ln-mlp": ln_mlp, "nn encoder layer (MHA)": encoder_layer}


def _library_models() -> dict[str, Callable[[], tuple[Any, tuple[Any, ...]]]]:
    import torch

    def torchvision(name: str) -> Callable[[], tuple[Any, tuple[Any, ...]]]:
        def build() -> tuple[Any, tuple[Any, ...]]:
            import torchvision.models as tvm

            return getattr(tvm, name)(weights=None), (torch.randn(1, 3, 224, 224),)

        return build

    def timm(name: str) -> Callable[[], tuple[Any, tuple[Any, ...]]]:
        def build() -> tuple[Any, tuple[Any, ...]]:
            import timm as timm_lib

            model = timm_lib.create_model(name, pretrained=False)
            return model, (torch.randn(1, 3, 224, 224),)

        return build

    models = {f"torchvision {n}": torchvision(n) for n in ("resnet18", "mobilenet_v3_small")}
    for name in (
        "resnet18",
        "mobilenetv2_035",
        "vit_tiny_patch16_224",
        "convnext_atto",
        "efficientnet_b0",
    ):
        models[f"timm {name}"] = timm(name)
    return models


def _modules_described(model: Any) -> dict[str, dict[str, Any]]:
    """Each module's description (children left out), by path."""
    from pytest_workload._fingerprint.structure import structure_node

    return {path: structure_node(module, []) for path, module in model.named_modules()}


def probe(names: list[str]) -> dict[str, Any]:
    """Runs inside one environment: every named model's depth-1 workloads, as JSON."""
    import importlib.metadata

    import torch

    from pytest_workload import WorkloadRecorder

    builders = {**_builtin_models(), **_library_models()}
    out: dict[str, Any] = {
        "versions": {d: importlib.metadata.version(d) for d in ("torch", "torchvision", "timm")},
        "models": {},
    }
    for name in names:
        torch.manual_seed(0)
        model, inputs = builders[name]()
        model.eval()
        recorder = WorkloadRecorder(name, max_depth=1, timing=False)
        recorder.track(model)
        with torch.no_grad(), recorder.recording(all_roots=False):
            model(*inputs)
        rows = []
        for w in recorder.workloads():
            rows.append(
                {
                    "name": "" if w.depth == 0 else w.name,
                    "structure": w.structure_hash,
                    "compute": w.compute_hash,
                    "ops": list(w.computation.flat) if w.computation is not None else None,
                }
            )
        out["models"][name] = {"workloads": rows, "modules": _modules_described(model)}
    return out


def _python(workdir: Path, name: str, requirements: list[str] | None) -> Path:
    """The interpreter of one environment, built first if it is not there yet."""
    if requirements is None:
        return Path(sys.executable)
    venv = workdir / name
    python = venv / "bin" / "python"
    marker = venv / "installed.txt"
    wanted = "\n".join(requirements + RUNTIME)
    if marker.exists() and marker.read_text() == wanted:
        return python
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", *requirements, *RUNTIME], check=True)
    marker.write_text(wanted)
    return python


def _run_probe(python: Path, names: list[str], extra_env: dict[str, str]) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), **extra_env}
    command = [str(python), str(Path(__file__).resolve()), "--probe", ",".join(names)]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{python} failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def _subtree(modules: dict[str, Any], root: str) -> Iterator[str]:
    return (p for p in modules if root == "" or p == root or p.startswith(root + "."))


def _field_changes(old: dict[str, Any], new: dict[str, Any], root: str) -> list[str]:
    """``Class.field`` for every differing field of a module of ``root``'s subtree."""
    changes: set[str] = set()
    for path in sorted(set(_subtree(old["modules"], root)) | set(_subtree(new["modules"], root))):
        a, b = old["modules"].get(path), new["modules"].get(path)
        if a is None or b is None:
            changes.add(f"module {path or '(root)'} {'added' if a is None else 'removed'}")
            continue
        cls = b["class"].rsplit(".", 1)[-1]
        for key in sorted(set(a) | set(b)):
            if a.get(key) == b.get(key):
                continue
            if key == "attributes":
                names = set(a[key]) ^ set(b[key]) | {
                    k for k in set(a[key]) & set(b[key]) if a[key][k] != b[key][k]
                }
                changes.update(f"{cls}.{n}" for n in names)
            else:
                changes.add(f"{cls} {key}")
    return sorted(changes)


def _first_op_change(old: list[str] | None, new: list[str] | None) -> str:
    if old is None or new is None:
        return "not traced"
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, False).get_opcodes():
        if tag != "equal":
            was = old[i1] if i1 < i2 else "(none)"
            now = new[j1] if j1 < j2 else "(none)"
            return f"op {j1 + 1}: {was} -> {now}"
    return "same operations"


def _compare(old: dict[str, Any], new: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(counts cell per hash, reasons) of one model between two environments."""
    by_name = {w["name"]: w for w in old["workloads"]}
    cells, reasons = [], []
    total = len(new["workloads"])
    for key in ("structure", "compute"):
        changed = [w for w in new["workloads"] if by_name.get(w["name"], {}).get(key) != w[key]]
        cells.append(f"{total - len(changed)}/{total}")
        for w in changed:
            label = w["name"] or "(root)"
            if w["name"] not in by_name:
                reasons.append(f"{key} {label}: workload not recorded there")
            elif key == "compute":
                was = by_name[w["name"]]["ops"]
                reasons.append(f"compute {label}: {_first_op_change(was, w['ops'])}")
            else:
                fields = ", ".join(_field_changes(old, new, w["name"])) or "?"
                reasons.append(f"structure {label}: {fields}")
    return cells, reasons


def _report(results: dict[str, dict[str, Any]]) -> None:
    current = results["current"]
    for name, result in results.items():
        versions = ", ".join(f"{k} {v}" for k, v in result["versions"].items())
        print(f"- {name}: {versions}")
    print()
    rows, notes = [], []
    for env, result in results.items():
        if env == "current":
            continue
        for model, new in current["models"].items():
            old = result["models"].get(model)
            if old is None:
                continue
            cells, reasons = _compare(old, new)
            rows.append([model, env, *cells])
            notes += [f"{model}, {env} vs current: {r}" for r in _collapse(reasons)]
    headers = ["model", "environment", "structure same", "compute same"]
    print(markdown_table(headers, rows))
    print()
    for note in notes:
        print(f"- {note}")


def _collapse(reasons: list[str]) -> list[str]:
    """Identical reasons of several workloads on one line: 'structure (6 workloads): ...'."""
    grouped: dict[str, list[str]] = {}
    for reason in reasons:
        head, _, why = reason.partition(": ")
        kind, _, label = head.rpartition(" ")
        grouped.setdefault(f"{kind}: {why}", []).append(label)
    lines = []
    for key, labels in grouped.items():
        kind, _, why = key.partition(": ")
        shown = ", ".join(labels[:6]) + (", ..." if len(labels) > 6 else "")
        lines.append(f"{kind} changed for {len(labels)} ({shown}): {why}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/pytest-workload-xv"))
    parser.add_argument("--models", help="comma-separated model names (default: all)")
    parser.add_argument("--quick", action="store_true", help="smoke run: two models")
    parser.add_argument("--probe", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe is not None:
        print(json.dumps(probe(args.probe.split(","))))
        return
    names = [*_builtin_models(), *_library_models()]
    if args.models:
        names = args.models.split(",")
    elif args.quick:
        names = ["nn conv-bn", "timm vit_tiny_patch16_224"]
    print_header("Cross-version hashes (depth-1 workloads, random weights, eval mode)")
    args.workdir.mkdir(parents=True, exist_ok=True)
    results = {}
    for env, requirements in ENVIRONMENTS.items():
        python = _python(args.workdir, env, requirements)
        results[env] = _run_probe(python, names, {})
    results["current, TIMM_FUSED_ATTN=0"] = _run_probe(
        Path(sys.executable), names, {"TIMM_FUSED_ATTN": "0"}
    )
    _report(results)


if __name__ == "__main__":
    main()
