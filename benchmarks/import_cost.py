"""What does the plugin cost a session that records nothing?

Every side runs as a fresh subprocess (the cost is paid once per interpreter), and the sides
alternate in a rotating order within every round:

* **import**: ``python -c "import pytest_workload.plugin"`` against ``python -c "import pytest"``
  (and a bare ``python -c pass`` for the interpreter's own start-up). The plugin module imports
  pytest, syrupy and the package's pure-Python core; torch must stay unimported, which is
  checked and printed.
* **pytest session**: ``python -m pytest`` of one trivial test file in a temporary directory
  (its own ``pytest.ini``, so this repository's ``addopts`` do not apply), with the plugin
  loaded from its entry point against ``-p no:workload``. The test itself reports whether the
  plugin is active and whether torch was imported.
* **recording session** (``--recording``): one marked test that calls a tiny model
  (``Linear(8, 8), ReLU, Linear(8, 2)``) once, recorded with ``--workload-timing=off`` (what
  recording itself costs: hooks, identity, tracing, FLOPs) and with the default timing (plus
  one 0.25 s timing budget), against ``-p no:workload``; with ``--main PATH`` also the same
  recording with the code at PATH (a copy of an older release, e.g. ``git archive main``),
  interleaved. Each side reports whether ``torch._dynamo`` was imported.

Run: ``python benchmarks/import_cost.py [--quick] [--recording [--main PATH]]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import markdown_table, median, print_header, quantile, ratio_summary

TRIVIAL_TEST = """\
import json, os, sys


def test_trivial(request):
    out = os.environ.get("WORKLOAD_BENCH_OUT")
    if out:
        with open(out, "w") as f:
            json.dump(
                {
                    "workload_plugin": request.config.pluginmanager.has_plugin("workload"),
                    "torch_imported": "torch" in sys.modules,
                },
                f,
            )
"""


RECORDING_TEST = """\
import json, os, sys

import pytest
import torch
from torch import nn


@pytest.mark.workloads
def test_tiny():
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2)).eval()
    with torch.no_grad():
        model(torch.rand(1, 8))


def teardown_module():
    out = os.environ.get("WORKLOAD_BENCH_OUT")
    if out:
        with open(out, "w") as f:
            json.dump({"dynamo_imported": "torch._dynamo" in sys.modules}, f)
"""


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.pop("WORKLOAD_BENCH_OUT", None)
    return env


def wall(cmd: list[str], cwd: Path | None, env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def alternate(
    sides: dict[str, list[str]], rounds: int, cwd: Path | None, env: dict[str, str]
) -> dict[str, list[float]]:
    names = list(sides)
    times: dict[str, list[float]] = {n: [] for n in names}
    for name in names:  # one untimed run each: warm the page cache and .pyc files
        wall(sides[name], cwd, env)
    for r in range(rounds):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            times[name].append(wall(sides[name], cwd, env))
    return times


def row(label: str, side: list[float], ref: list[float]) -> list[object]:
    ratios = [s / r for s, r in zip(side, ref, strict=True)]
    extra = [(s - r) * 1e3 for s, r in zip(side, ref, strict=True)]
    return [
        label,
        f"{median(side) * 1e3:.1f} ms",
        f"{median(ref) * 1e3:.1f} ms",
        f"{median(extra):+.1f} ms [IQR {quantile(extra, 0.25):+.1f}, {quantile(extra, 0.75):+.1f}]",
        ratio_summary(ratios),
    ]


def loaded_modules() -> dict[str, bool]:
    code = (
        "import json, sys, pytest_workload.plugin; "
        "print(json.dumps({m: m in sys.modules for m in ('torch', 'numpy', 'syrupy')}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, env=clean_env()
    )
    return json.loads(out.stdout)


def session_facts(cmd: list[str], cwd: Path) -> dict[str, bool]:
    env = clean_env()
    env["WORKLOAD_BENCH_OUT"] = str(cwd / "facts.json")
    subprocess.run(cmd, cwd=cwd, env=env, check=True, capture_output=True)
    return json.loads((cwd / "facts.json").read_text())


def recording(rounds: int, main_path: str | None) -> None:
    """Sessions that record one tiny model, against the same session without the plugin."""
    py, env = sys.executable, clean_env()
    here = str(Path(__file__).resolve().parent.parent)
    with tempfile.TemporaryDirectory(prefix="workload-record-bench-") as tmp:
        cwd = Path(tmp)
        (cwd / "pytest.ini").write_text("[pytest]\nmarkers =\n    workloads: recorded\n")
        (cwd / "test_tiny.py").write_text(RECORDING_TEST)
        base = [py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"]

        def at(path: str, *extra: str) -> list[str]:
            return ["env", f"PYTHONPATH={path}", *base, *extra, "test_tiny.py"]

        sides = {
            "without": at(here, "-p", "no:workload"),
            "untimed": at(here, "--workload-timing=off"),
            "timed": at(here),
        }
        if main_path is not None:
            sides["main untimed"] = at(main_path, "--workload-timing=off")
        facts = {name: session_facts(cmd, cwd) for name, cmd in sides.items()}
        runs = alternate(sides, rounds, cwd, env)
    print_header("Fixed cost of a session that records one tiny model")
    print(f"{rounds} alternated rounds; wall time of each subprocess, start to exit.\n")
    rows = [
        row(f"recording, {name}, vs `-p no:workload`", runs[name], runs["without"])
        for name in sides
        if name != "without"
    ]
    if main_path is not None:
        rows.append(
            row("this branch untimed vs main untimed", runs["untimed"], runs["main untimed"])
        )
    print(
        markdown_table(["session", "median", "reference median", "difference [IQR]", "ratio"], rows)
    )
    print()
    for name, fact in facts.items():
        print(f"- {name}: torch._dynamo imported = {fact['dynamo_imported']}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: 3 rounds")
    parser.add_argument("--rounds", type=int, default=None, help="alternated rounds (default 30)")
    parser.add_argument("--recording", action="store_true", help="sessions that record")
    parser.add_argument("--main", default=None, help="with --recording: an older release's code")
    args = parser.parse_args(argv)
    rounds = args.rounds or (3 if args.quick else 30)
    if args.recording:
        recording(rounds, args.main)
        return
    py, env = sys.executable, clean_env()

    imports = alternate(
        {
            "bare": [py, "-c", "pass"],
            "pytest": [py, "-c", "import pytest"],
            "plugin": [py, "-c", "import pytest_workload.plugin"],
        },
        rounds,
        None,
        env,
    )
    modules = loaded_modules()

    with tempfile.TemporaryDirectory(prefix="workload-import-bench-") as tmp:
        cwd = Path(tmp)
        (cwd / "pytest.ini").write_text("[pytest]\n")
        (cwd / "test_trivial.py").write_text(TRIVIAL_TEST)
        base = [py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_trivial.py"]
        sessions = {"with": base, "without": [*base, "-p", "no:workload"]}
        facts = {name: session_facts(cmd, cwd) for name, cmd in sessions.items()}
        runs = alternate(sessions, rounds, cwd, env)

    print_header("Import cost of the plugin for a session that records nothing")
    print(f"{rounds} alternated rounds; wall time of each subprocess, start to exit.\n")
    print(
        markdown_table(
            ["command", "median", "reference median", "difference [IQR]", "ratio"],
            [
                row(
                    '`python -c "import pytest"` vs `python -c pass`',
                    imports["pytest"],
                    imports["bare"],
                ),
                row(
                    '`python -c "import pytest_workload.plugin"` vs `import pytest`',
                    imports["plugin"],
                    imports["pytest"],
                ),
                row(
                    "`python -m pytest test_trivial.py` vs the same with `-p no:workload`",
                    runs["with"],
                    runs["without"],
                ),
            ],
        )
    )
    print()
    print(
        f"- after `import pytest_workload.plugin`: torch in sys.modules = {modules['torch']}, "
        f"numpy = {modules['numpy']}, syrupy = {modules['syrupy']}"
    )
    for name, fact in facts.items():
        print(
            f"- pytest session {name} the plugin: plugin active = {fact['workload_plugin']}, "
            f"torch imported by the end of the test = {fact['torch_imported']}"
        )
    ok = not modules["torch"] and not facts["with"]["torch_imported"]
    print(f"- torch stays unimported in a session that records nothing: {'yes' if ok else 'NO'}")


if __name__ == "__main__":
    main()
