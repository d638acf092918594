"""Shared helpers of the benchmark scripts: robust statistics, tables and run metadata.

Not a benchmark itself. Every script puts ``benchmarks/`` first on ``sys.path`` when run as
``python benchmarks/<script>.py``, so this module imports as ``_common``.
"""

from __future__ import annotations

import contextlib
import math
import os
import platform
import random
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from typing import Any


def baseline_package(checkout: str) -> Any:
    """The ``pytest_workload`` package of another checkout (``--baseline``), imported under
    another name, so that a benchmark times it and this one side by side in one process."""
    import importlib.util
    from pathlib import Path

    package = Path(checkout) / "pytest_workload"
    spec = importlib.util.spec_from_file_location(
        "pytest_workload_baseline",
        package / "__init__.py",
        submodule_search_locations=[str(package)],
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def quantile(values: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile (the same rule as ``pytest_workload._perf.stopwatch``)."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no values")
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def median(values: Sequence[float]) -> float:
    return quantile(values, 0.5)


def bootstrap_median_ci(
    values: Sequence[float], *, resamples: int = 2000, level: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """Percentile-bootstrap interval of the median (seeded, so a rerun prints the same)."""
    if len(values) < 2:
        return values[0], values[0]
    rng = random.Random(seed)
    n = len(values)
    medians = sorted(median([values[rng.randrange(n)] for _ in range(n)]) for _ in range(resamples))
    tail = (1 - level) / 2
    return quantile(medians, tail), quantile(medians, 1 - tail)


def ratio_summary(ratios: Sequence[float]) -> str:
    """``median [q1, q3] (95% CI lo-hi)`` of per-round ratios."""
    lo, hi = bootstrap_median_ci(ratios)
    return (
        f"{median(ratios):.3f}x [IQR {quantile(ratios, 0.25):.3f}-{quantile(ratios, 0.75):.3f}]"
        f" (95% CI {lo:.3f}-{hi:.3f})"
    )


def wilson_interval(successes: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson score interval of a binomial rate (sane at 0/n and n/n)."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def rate(successes: int, n: int) -> str:
    """``x/n (p%, 95% CI lo-hi%)``."""
    lo, hi = wilson_interval(successes, n)
    pct = 100 * successes / n if n else 0.0
    return f"{successes}/{n} ({pct:.0f}%, CI {100 * lo:.0f}-{100 * hi:.0f}%)"


def fmt_time(seconds: float) -> str:
    """A duration with a unit that keeps 3-4 significant digits."""
    if seconds >= 1:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f} ms"
    if seconds >= 1e-6:
        return f"{seconds * 1e6:.2f} µs"
    return f"{seconds * 1e9:.0f} ns"


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(" --- " for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def command_line() -> str:
    """The command that ran this script, as it could be pasted into a shell."""
    return shlex.join(["python", *sys.argv])


def machine() -> str:
    """CPU model, logical cores and library versions, for the record."""
    import os

    model = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    parts = [f"{model}, {os.cpu_count()} logical cores", f"Python {platform.python_version()}"]
    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        parts.append(f"torch {torch.__version__} ({torch.get_num_threads()} threads)")
    return "; ".join(parts)


def print_header(title: str) -> None:
    print(f"## {title}\n")
    print(f"Command: `{command_line()}`\n")
    print(f"Machine: {machine()}\n")


class PausedProcesses:
    """Competing child processes, paused (SIGSTOP) except inside ``running()``."""

    def __init__(self, procs: list[subprocess.Popen[bytes]]) -> None:
        self.procs = procs
        self._signal(signal.SIGSTOP)
        # a benchmark killed with SIGTERM unwinds (SystemExit), so close() ends these too
        # instead of leaving them spinning, orphaned, under the next measurement
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(f"terminated; load {self.pids()} ended"))

    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def _signal(self, sig: int) -> None:
        for p in self.procs:
            os.kill(p.pid, sig)

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        self._signal(signal.SIGCONT)
        time.sleep(0.02)
        try:
            yield
        finally:
            self._signal(signal.SIGSTOP)

    def close(self) -> None:
        self._signal(signal.SIGCONT)
        for p in self.procs:
            p.terminate()
            p.wait()


BURSTY = """
import random, time
while True:
    end = time.perf_counter() + random.uniform(0.01, 0.5)
    while time.perf_counter() < end:
        pass
    time.sleep(random.uniform(0.01, 0.5))
"""

STOPPER = """
import os, random, signal, sys, time
target = int(sys.argv[1])
while True:
    time.sleep(random.uniform(0.5, 3.0))
    try:
        os.kill(target, signal.SIGSTOP)
        time.sleep(random.uniform(0.01, 0.5))
        os.kill(target, signal.SIGCONT)
    except ProcessLookupError:
        break
"""


def stopper(target: int) -> subprocess.Popen[bytes]:
    """A process that freezes ``target`` with SIGSTOP for 10-500 ms every 0.5-3 s: a stall the
    scheduler cannot see, as when a VM's vCPU is descheduled."""
    return subprocess.Popen([sys.executable, "-c", STOPPER, str(target)])


class Load(PausedProcesses):
    """Competing load, paused except inside ``running()``: ``busy`` processes spinning all the
    time, ``bursty`` neighbours spinning 10-500 ms then sleeping 10-500 ms, and, if
    ``stall_target`` is given, a stopper freezing that process."""

    def __init__(self, busy: int, bursty: int, stall_target: int | None = None) -> None:
        python = sys.executable
        procs = [subprocess.Popen([python, "-c", "while True: pass"]) for _ in range(busy)]
        procs += [subprocess.Popen([python, "-c", BURSTY]) for _ in range(bursty)]
        if stall_target is not None:
            procs.append(stopper(stall_target))
        self.stall_target = stall_target
        super().__init__(procs)
        print("load pids:", *self.pids(), file=sys.stderr, flush=True)

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        try:
            with super().running():
                yield
        finally:
            if self.stall_target is not None:  # in case the stopper paused it mid-stall
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.stall_target, signal.SIGCONT)
