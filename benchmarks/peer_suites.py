"""Two peer suites nobody here wrote, run unedited in six modes: torchvision's model tests and a
transformers modeling slice (bert, gpt2, llama, t5).

The suites are checkouts outside this repository, laid out under ``--root`` (see
docs/benchmarks.md, "Peer suites", for where each file comes from):

- ``ROOT/torchvision/test/test_models.py`` (+ common_utils.py, conftest.py, _utils_internal.py);
- ``ROOT/transformers/tests/models/{bert,gpt2,llama,t5}/test_modeling_*.py`` with the tests/
  helpers, ``src/``, ``conftest.py`` and ``pyproject.toml`` of a transformers checkout;
- ``ROOT/deps``: the suites' own test dependencies (pytest-mock, parameterized, httpx), put on
  ``PYTHONPATH`` when present so that this repository's environment stays as it is.

Each suite runs, CPU only, in six modes: ``-p no:workload`` (the reference);
``--workload-record=all --workload-snapshot --snapshot-update``; the same without
``--snapshot-update``; that rerun with ``-n 2``; ``-p no:workload -n 2`` (the reference of the
``-n 2`` rerun, which pays for starting the workers too); ``--workload-record=all
--workload-timing=off``. Every test's outcome (JUnit XML) is compared with the serial reference;
the table gives wall time (the median of ``--repeat`` rounds, modes alternated in each), the
ratio to the mode's reference, the mismatches (with the first line of each one's error), the
plugin's terminal report in lines, and the workloads left without a timing or FLOPs (JSON
report). ``--baseline DIR`` runs every plugin mode a second time with another tree's plugin,
in the same rounds, for a before/after table.

The plugin tested is this tree's (its root is put first on ``PYTHONPATH``). Before the first
mode, what the modes write into a checkout (snapshots, baselines, torchvision's regenerated
``test/expect/*.pkl``) is deleted; ``--reset`` only does that. Any other file a run leaves in a
checkout is listed. Run: ``python benchmarks/peer_suites.py --root /work/peer [--only SUITE]
[--modes off,update,...] [--workdir DIR] [--repeat N] [--baseline DIR]``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import markdown_table, print_header

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Suite:
    directory: str
    paths: tuple[str, ...]
    #: ``-k``: a slice that takes a few minutes on 2 cores, CPU only.
    keyword: str
    env: tuple[tuple[str, str], ...]
    #: Globs, relative to the checkout, of what the suite itself writes when run this way.
    writes: tuple[str, ...] = ()


SUITES = {
    # Classification (each test also scripts the model and FX-traces it), detection, segmentation,
    # video and quantized models, small ones; no CUDA. The expected outputs (.pkl) are binary
    # files the checkout lacks: EXPECTTEST_ACCEPT=1 makes the suite write them instead of reading.
    "torchvision": Suite(
        "torchvision",
        ("test/test_models.py",),
        "not cuda and (dilation or norm_layer or residual_setting or transform_repr"
        " or detection_model_validation"
        " or (classification and (resnet18 or mobilenet_v2 or mobilenet_v3_small"
        " or squeezenet1_0 or squeezenet1_1 or shufflenet_v2_x0_5 or mnasnet0_5 or mnasnet0_75"
        " or regnet_x_400mf or regnet_y_400mf or alexnet or swin_t))"
        " or (test_detection_model and (320_fpn or ssdlite or retinanet_resnet50_fpn_v2))"
        " or (segmentation and (lraspp or deeplabv3_mobilenet))"
        " or (video and mc3_18)"
        " or (quantized and (mobilenet_v2 or shufflenet_v2_x0_5 or resnet18 or googlenet)))",
        (("EXPECTTEST_ACCEPT", "1"),),
        ("test/expect/*.pkl",),
    ),
    # The common model tests that run a forward (attention, hidden states, batching, training,
    # greedy generation, save/load); not the distributed mixins, not the hub-reading
    # integration tests, not test_training_overfit (minutes per model) nor gradient checkpointing.
    "transformers": Suite(
        "transformers",
        tuple(f"tests/models/{m}/test_modeling_{m}.py" for m in ("bert", "gpt2", "llama", "t5")),
        "(attention_outputs or hidden_states_output or forward_signature or determinism"
        " or greedy_generate or batching_equivalence or retain_grad or feed_forward_chunking"
        " or inputs_embeds_matches or get_set_embeddings or test_config or problem_types"
        " or torch_save_load or test_training or main_input_name or model_is_small)"
        " and not overfit and not gradient_checkpointing and not tensor_parallel"
        " and not fsdp and not expert_parallel and not Integration",
        (("HF_HUB_OFFLINE", "1"), ("TRANSFORMERS_OFFLINE", "1")),
    ),
}

PLUGIN_WRITES = ("**/__workload_snapshots__", "**/__workload_baselines__")
RECORD = ("--workload-record=all", "--workload-snapshot")
MODES = {
    "off": ("-p no:workload", ("-p", "no:workload")),
    "update": ("record=all, gate, --snapshot-update", (*RECORD, "--snapshot-update")),
    "rerun": ("record=all, gate", RECORD),
    "xdist": ("record=all, gate, -n 2", (*RECORD, "-n", "2")),
    "xdist-off": ("-p no:workload, -n 2", ("-p", "no:workload", "-n", "2")),
    "untimed": ("record=all, timing off", ("--workload-record=all", "--workload-timing=off")),
}
#: A section header of pytest's terminal summary, such as "---- workload performance ----".
#: The mode a mode's ratio is against, where it is not ``off``.
REFERENCE = {"xdist": "xdist-off"}
HEADER = re.compile(r"^[=_-]{3,} .+ [=_-]{3,}$")


@dataclass
class Run:
    wall: float
    code: int
    outcomes: dict[str, tuple[str, str]]
    report_lines: int
    workloads: int | None
    untimed: int | None
    no_flops: int | None


def reset(checkout: Path, suite: Suite) -> list[Path]:
    removed = []
    for pattern in (*PLUGIN_WRITES, *suite.writes):
        for path in sorted(checkout.glob(pattern)):
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink()
            removed.append(path)
    return removed


def files(checkout: Path) -> set[Path]:
    return {
        p.relative_to(checkout)
        for p in checkout.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


def outcomes(junit: Path) -> dict[str, tuple[str, str]]:
    """Outcome and the first line of its message, by test id."""
    found = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        detail = next((c for c in case if c.tag in ("failure", "error", "skipped")), None)
        kind = "passed" if detail is None else detail.tag
        message = "" if detail is None else (detail.get("message") or detail.text or "")
        first = message.strip().splitlines()[0][:160] if message.strip() else ""
        found[f"{case.get('classname')}::{case.get('name')}"] = (kind, first)
    return found


def report_lines(stdout: str) -> int:
    """Lines of the terminal summary's sections about workloads, headers included."""
    count, inside = 0, False
    for line in stdout.splitlines():
        if HEADER.match(line):
            inside = "workload" in line.lower()
        count += inside
    return count


def json_counts(path: Path) -> tuple[int | None, int | None, int | None]:
    if not path.exists():
        return None, None, None
    tests = json.loads(path.read_text())["tests"]
    rows = [w for t in tests for w in t["workloads"]]
    measured = [w.get("measured") or {} for w in rows]
    untimed = sum(str(m.get("timing", "")).startswith("not measured") for m in measured)
    no_flops = sum(str(m.get("flops", "")).startswith("not measured") for m in measured)
    return len(rows), untimed, no_flops


def path_with(tree: Path, root: Path) -> str:
    """The ``PYTHONPATH`` a suite runs with: ``tree``'s plugin first, then ``ROOT/deps``."""
    deps = root / "deps"
    extra = [str(deps)] if deps.is_dir() else []
    return os.pathsep.join([str(tree), *extra, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)


def run(
    checkout: Path, suite: Suite, mode: str, workdir: Path, pythonpath: str, tag: str = ""
) -> Run:
    junit = workdir / f"{suite.directory}-{mode}{tag}.xml"
    report = workdir / f"{suite.directory}-{mode}{tag}.json"
    report.unlink(missing_ok=True)
    json_arg = () if "no:workload" in MODES[mode][1] else (f"--workload-json={report}",)
    command = [
        sys.executable,
        *("-m", "pytest", "-p", "no:cacheprovider", "-o", "log_cli=false"),
        *("--rootdir", str(checkout), f"--junitxml={junit}", "-k", suite.keyword),
        *MODES[mode][1],
        *json_arg,
        *suite.paths,
    ]
    env = {**os.environ, **dict(suite.env), "PYTHONPATH": pythonpath}
    started = time.perf_counter()
    result = subprocess.run(command, cwd=checkout, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    (workdir / f"{suite.directory}-{mode}{tag}.out").write_text(result.stdout + result.stderr)
    if not junit.exists():
        raise SystemExit(f"{suite.directory} {mode}: no JUnit XML; see {workdir}")
    return Run(
        wall, result.returncode, outcomes(junit), report_lines(result.stdout), *json_counts(report)
    )


def table(suite: Suite, runs: dict[tuple[str, str], list[Run]]) -> tuple[str, list[str]]:
    """One row per mode and plugin tree; a run's outcomes are its first round's."""
    walls = {key: statistics.median(r.wall for r in rounds) for key, rounds in runs.items()}
    reference = runs.get(("off", ""), [None])[0]
    rows = []
    #: (test, outcome plugin-off, outcome, first line) -> the modes where it was so.
    mismatches: dict[tuple[str, str, str, str], list[str]] = {}
    for (mode, tree), rounds in runs.items():
        result, wall = rounds[0], walls[mode, tree]
        base = walls.get((REFERENCE.get(mode, "off"), ""))
        ratio = "" if base is None else f"{wall / base:.2f}x"
        label = MODES[mode][0] + tree
        if reference is None:
            same = ""
        else:
            differ = 0
            for test, (expected, _) in reference.outcomes.items():
                kind, first = result.outcomes.get(test, ("missing", ""))
                if kind != expected:
                    differ += 1
                    mismatches.setdefault((test, expected, kind, first), []).append(label)
            same = "all" if not differ else f"{differ} differ"
        counts = "" if result.workloads is None else f"{result.workloads}"
        unmeasured = "" if result.untimed is None else f"{result.untimed} / {result.no_flops}"
        rows.append(
            [
                label,
                " / ".join(f"{r.wall:.1f}" for r in rounds) + " s",
                ratio,
                result.code,
                same,
                result.report_lines,
                counts,
                unmeasured,
            ]
        )
    headers = [
        "mode",
        "wall (each round)",
        "ratio to its reference",
        "exit",
        "outcomes as plugin-off",
        "report lines",
        "workloads",
        "untimed / no FLOPs",
    ]
    details = [
        f"- `{test}` {expected} -> {kind} in {', '.join(modes)}: {first}"
        for (test, expected, kind, first), modes in mismatches.items()
    ]
    return markdown_table(headers, rows), details


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--root", type=Path, required=True, help="holds torchvision/, transformers/"
    )
    parser.add_argument("--only", choices=sorted(SUITES), action="append")
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated, in order")
    parser.add_argument("--workdir", type=Path, default=None, help="JUnit, JSON and output files")
    parser.add_argument("--reset", action="store_true", help="only delete what the modes wrote")
    parser.add_argument("--repeat", type=int, default=1, help="rounds; walls are their median")
    parser.add_argument(
        "--baseline", type=Path, default=None, help="also run each plugin mode with this tree's"
    )
    args = parser.parse_args()
    modes = args.modes.split(",")
    unknown = sorted(set(modes) - set(MODES))
    if unknown:
        parser.error(f"unknown modes {unknown}; known: {', '.join(MODES)}")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="peer-suites-"))
    workdir.mkdir(parents=True, exist_ok=True)

    #: (mode, tag in the table) -> the PYTHONPATH it runs with; a baseline follows each mode
    plans: dict[tuple[str, str], str] = {}
    for mode in modes:
        plans[mode, ""] = path_with(REPO, args.root)
        if args.baseline is not None and "no:workload" not in MODES[mode][1]:
            plans[mode, " (baseline)"] = path_with(args.baseline.resolve(), args.root)
    print_header("Peer suites, unedited")
    baseline = "" if args.baseline is None else f"; baseline: {args.baseline.resolve()}"
    print(f"Plugin: {REPO}{baseline}; outputs: {workdir}; rounds: {args.repeat}\n")
    for name in args.only or sorted(SUITES):
        suite = SUITES[name]
        checkout = (args.root / suite.directory).resolve()
        removed = reset(checkout, suite)
        if args.reset:
            print(f"{name}: removed {len(removed)} paths")
            continue
        before = files(checkout)
        runs: dict[tuple[str, str], list[Run]] = {key: [] for key in plans}
        for number in range(args.repeat):
            for (mode, tree), pythonpath in plans.items():
                tag = "-baseline" if tree else ""
                runs[mode, tree].append(
                    run(checkout, suite, mode, workdir, pythonpath, f"{tag}-{number}")
                )
        written = sorted(str(p) for p in files(checkout) - before)
        allowed = [
            p
            for p in written
            if any(Path(p).match(g) for g in suite.writes)
            or "__workload_snapshots__" in p
            or "__workload_baselines__" in p
        ]
        text, details = table(suite, runs)
        first = next(iter(runs.values()))[0]
        print(f"### {name} ({len(first.outcomes)} tests)\n\n{text}\n")
        if details:
            print("Outcome mismatches:\n" + "\n".join(details) + "\n")
        stray = sorted(set(written) - set(allowed))
        print(
            f"Written into the checkout: {len(allowed)} expected paths"
            + (f", and unexpected: {stray}" if stray else "")
            + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
