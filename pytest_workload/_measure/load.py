"""Load probes: what competition for the CPU cost a timing, read from the kernel.

Both read counters with microsecond or better resolution (schedstat, PSI), so a timing of a
few milliseconds has a known load: none of the 10 ms ticks of ``/proc/stat``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable


def thread_waits_ns() -> dict[str, int] | None:
    """Nanoseconds each thread of this process has waited, runnable, on a run queue since it
    started (Linux ``/proc/self/task/*/schedstat``; None where the kernel keeps none)."""
    waits: dict[str, int] = {}
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return None
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/schedstat", encoding="ascii") as f:
                fields = f.read().split()
        except OSError:
            continue  # a thread that ended meanwhile
        if len(fields) >= 2:
            waits[task] = int(fields[1])
    return waits or None


def cpu_pressure_us() -> int | None:
    """Microseconds some task on this machine (or cgroup) waited for a CPU since boot
    (Linux PSI, ``/proc/pressure/cpu``; None without PSI)."""
    try:
        with open("/proc/pressure/cpu", encoding="ascii") as f:
            some = f.readline().split()
    except OSError:
        return None
    total = [v for v in some if v.startswith("total=")]
    return int(total[0].removeprefix("total=")) if some[:1] == ["some"] and total else None


class LoadProbe:
    """What competition for the CPU cost a timing, read from the kernel at its start and end.

    ``others`` (0..1): the largest share of the timing's wall time any thread of this process
    (the timing thread, or a thread of torch's pool it waits for) spent runnable but waiting
    for a core other tasks held (schedstat, ns resolution, so known for a timing of any
    length); a timing that waited ``others`` of its time ran up to ``1 / (1 - others)`` times
    slower than it would alone. ``pressure`` (0..1): the share of the wall time during which
    some task on the machine waited for a CPU (PSI). Either stays None where the kernel does
    not provide it.
    """

    def __init__(
        self,
        waits: Callable[[], dict[str, int] | None] = thread_waits_ns,
        pressure: Callable[[], int | None] = cpu_pressure_us,
        wall: Callable[[], int] = time.perf_counter_ns,
    ) -> None:
        self._waits, self._pressure, self._wall = waits, pressure, wall
        self.others: float | None = None
        self.pressure: float | None = None

    def __enter__(self) -> LoadProbe:
        self._start = (self._waits(), self._pressure(), self._wall())
        return self

    def __exit__(self, *_: object) -> None:
        waits, pressure, wall = self._waits(), self._pressure(), self._wall()
        start_waits, start_pressure, start_wall = self._start
        elapsed_ns = wall - start_wall
        if elapsed_ns <= 0:
            return
        if waits is not None and start_waits is not None:
            waited = [waits[t] - start_waits[t] for t in waits.keys() & start_waits.keys()]
            self.others = _share(max(waited, default=0) / elapsed_ns)
        if pressure is not None and start_pressure is not None:
            self.pressure = _share((pressure - start_pressure) * 1e3 / elapsed_ns)


def _share(value: float) -> float:
    return min(1.0, max(0.0, value))
