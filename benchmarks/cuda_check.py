"""The CUDA path on a GPU, in one run: issue 21's device checks.

1. ``tests/test_cuda.py``, whose tests skip without a GPU: CUDA events, the calibration kernel
   built on the device, peak memory from the device's counters, FLOPs on CPU against CUDA.
2. Peak memory: the replay's ``peak_memory_bytes`` beside ``torch.cuda.max_memory_allocated``
   around one plain call of the same model, input and allocator state.
3. Timing agreement on the device: ``timing_agreement.py --device cuda`` (the plugin's
   event-timed median against ``torch.utils.benchmark``, alternated rounds).

Without a CUDA device it says so in one line and exits 0. Paste its output into
docs/benchmarks.md.

Run: ``python benchmarks/cuda_check.py [--rounds 5]``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import torch
from _common import markdown_table, print_header

from pytest_workload._perf.replay import replay

HERE = Path(__file__).resolve().parent


def peak_memory_rows() -> list[list[str]]:
    import timm

    rows = []
    for name, size in (("mobilenetv2_035", 224), ("resnet18", 224), ("resnet50", 256)):
        model = timm.create_model(name, pretrained=False).eval().cuda()
        x = torch.rand(8, 3, size, size, device="cuda")
        with torch.no_grad():
            model(x)  # warm: the allocator's cache holds what the next calls reuse
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            before = torch.cuda.memory_allocated()
            model(x)
            torch.cuda.synchronize()
            plain = torch.cuda.max_memory_allocated() - before
            replayed = replay(model, model, (x,), {}, None, count=False).peak_memory_bytes
        mib = 2**20
        shown = "n/a" if replayed is None else f"{replayed / mib:.1f} MiB"
        ratio = "n/a" if not replayed or not plain else f"{replayed / plain:.3f}"
        rows.append([f"{name} @ 8x3x{size}x{size}", f"{plain / mib:.1f} MiB", shown, ratio])
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="timing agreement rounds")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("cuda_check: no CUDA device here; nothing measured")
        return 0
    print_header(f"CUDA checks on {torch.cuda.get_device_name()}, torch {torch.__version__}")
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/test_cuda.py", "-p", "no:xdist", "-q", "-rs"],
        cwd=HERE.parent,
        check=False,
    )
    print(f"\ntests/test_cuda.py exit status {tests.returncode}\n")
    print_header("Peak memory: replay against torch.cuda.max_memory_allocated")
    headers = ["workload", "plain call", "replay's peak", "replay / plain"]
    print(markdown_table(headers, peak_memory_rows()))
    print()
    agreement = [sys.executable, str(HERE / "timing_agreement.py"), "--device", "cuda"]
    timing = subprocess.run([*agreement, "--rounds", str(args.rounds)], check=False)
    return tests.returncode or timing.returncode


if __name__ == "__main__":
    raise SystemExit(main())
