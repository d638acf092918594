"""A real suite nobody here wrote, recorded unedited: a slice of timm's own tests/test_models.py.

The timm source distribution of the installed timm version is fetched from the package
registry (``pip download --no-binary``) into a scratch directory, never into this repository,
and a slice of its ``test_model_forward`` and ``test_model_forward_features`` tests (the first
``--tests`` ids among small architectures, in collection order) runs six ways in one sitting:

1. ``-p no:workload``: the reference outcomes and wall time;
2. ``--workload-record=all --workload-snapshot --snapshot-update``: snapshots written;
3. the same without ``--snapshot-update``: every snapshot must pass again (stable on rerun);
4. the same with ``-n 2``: every snapshot must pass under xdist too;
5. ``-p no:workload -n 2``: the reference for the ``-n 2`` run (two workers on two cores run
   slower than one process);
6. ``--workload-record=all --workload-timing=off``: recording alone, no replay.

Outcomes are compared test by test (JUnit XML); the table gives wall times and the ratio to
the reference. Run: ``python benchmarks/timm_suite.py [--tests 64] [--workdir DIR]``.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tarfile
import tempfile
import time
import xml.etree.ElementTree as ET
from importlib.metadata import version
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import markdown_table, print_header

#: Small architectures of several families, so the slice runs in minutes on 2 cores.
#: timm's ids put the batch size first: ``test_model_forward[1-resnet18]``.
FAMILIES = re.compile(
    r"\[(\w+-)?(resnet(10t|14t|18|18d|26)|mobilenetv[234]_\w*(035|050|small|100)\w*|"
    r"efficientnet_b0|convnext_(atto|femto)\w*|regnetx_002|ghostnet_050|lcnet_0\d\d|"
    r"mnasnet_small|vit_tiny_patch16_224|deit_tiny_patch16_224|levit_128s|mixnet_s|dla34|"
    r"densenet121)\]"
)

#: The tests of the slice: plain and features-only forwards (no TorchScript, no FX).
SLICE = "test_model_forward and not torchscript and not fx"
PIP_SDIST = (sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:")


def _fetch_tests(workdir: Path) -> Path:
    """timm's tests/ of the installed version, unpacked under ``workdir``."""
    release = version("timm")
    target = workdir / f"timm-{release}"
    if not (target / "tests" / "test_models.py").exists():
        subprocess.run(
            [*PIP_SDIST, f"timm=={release}", "-d", str(workdir)],
            check=True,
        )
        with tarfile.open(workdir / f"timm-{release}.tar.gz") as archive:
            members = [m for m in archive.getmembers() if "/tests/" in m.name]
            archive.extractall(workdir, members=members, filter="data")
    return target


def _pytest(cwd: Path, *args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-W",
        "ignore::pytest.PytestUnknownMarkWarning",
        "-q",
        "--rootdir",
        str(cwd),
        *args,
    ]


def _select(suite: Path, count: int) -> list[str]:
    listed = subprocess.run(
        [
            *_pytest(suite, "--collect-only", "-p", "no:workload", "tests/test_models.py"),
            "-k",
            SLICE,
        ],
        cwd=suite,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    ids = [line for line in listed if "::" in line and FAMILIES.search(line)]
    if not ids:  # (an empty list would run every test of the directory)
        raise SystemExit("no test id of timm's tests/test_models.py matched FAMILIES")
    return ids[:count]


def _outcomes(junit: Path) -> dict[str, str]:
    outcomes = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        kind = next((c.tag for c in case if c.tag in ("failure", "error", "skipped")), "passed")
        outcomes[f"{case.get('classname')}::{case.get('name')}"] = kind
    return outcomes


def _run(suite: Path, ids: list[str], name: str, *args: str) -> tuple[float, dict[str, str], int]:
    junit = suite / f"{name}.xml"
    started = time.perf_counter()
    result = subprocess.run(
        _pytest(suite, *args, f"--junitxml={junit}", *ids), cwd=suite, capture_output=True
    )
    wall = time.perf_counter() - started
    return wall, _outcomes(junit), result.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=64)
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="timm-suite-"))
    workdir.mkdir(parents=True, exist_ok=True)
    suite = _fetch_tests(workdir)
    ids = _select(suite, args.tests)
    gate = ("--workload-record=all", "--workload-snapshot", "-p", "no:xdist")
    runs = [
        ("reference (-p no:workload)", "off", ("-p", "no:workload", "-p", "no:xdist")),
        ("record=all, gate, --snapshot-update", "update", (*gate, "--snapshot-update")),
        ("record=all, gate, rerun", "rerun", gate),
        ("record=all, gate, -n 2", "xdist", (*gate[:2], "-n", "2")),
        ("reference, -n 2 (-p no:workload)", "off-xdist", ("-p", "no:workload", "-n", "2")),
        (
            "record=all, timing off",
            "untimed",
            ("--workload-record=all", "--workload-timing=off", "-p", "no:xdist"),
        ),
    ]
    results = {key: _run(suite, ids, key, *run_args) for _, key, run_args in runs}
    reference_wall, reference, _ = results["off"]
    print_header(f"timm's own tests, unedited (timm {version('timm')}, {len(ids)} tests)")
    rows = []
    for label, key, _ in runs:
        wall, outcomes, code = results[key]
        differ = [k for k in reference if outcomes.get(k) != reference[k]]
        same = "yes" if not differ else f"no: {len(differ)} differ, e.g. {differ[0]}"
        rows.append([label, f"{wall:.1f} s", f"{wall / reference_wall:.2f}x", code, same])
    headers = ["run", "wall", "ratio", "exit", "outcomes as without the plugin"]
    print(markdown_table(headers, rows))
    counts: dict[str, int] = {}
    for outcome in reference.values():
        counts[outcome] = counts.get(outcome, 0) + 1
    print("\nreference outcomes: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
