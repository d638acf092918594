"""Compile readiness: what dynamo makes of a test's eager model, asked for with
``@pytest.mark.workloads(compile="aot_eager")``.

A compile leaves state a later test could read (dynamo's caches on code objects, its counters,
metrics and config), so the model is compiled in a forked child, which resets dynamo, compiles,
calls, observes, sends each workload's health back through a pipe as JSON and leaves with
``os._exit``: no exit code of pytest's or the user's runs there. Where fork is missing, or the
child dies or runs out of time, the readiness is not checked, with a line saying why.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from .._core.codec import Record, codec
from .._core.errors import WorkloadDataError
from .._core.strict_json import Json
from .._torch_internals import graph_break_ids
from .health import CompileHealth, health_agrees, health_lines
from .observe import CallObservation

if TYPE_CHECKING:
    from torch import nn

#: The backends a readiness check may compile with: the cheap ones, which trace as inductor
#: does (``eager``: dynamo alone; ``aot_eager``: also AOTAutograd) without generating code.
BACKENDS = ("eager", "aot_eager")
#: A child that has not answered by then is killed: readiness not checked.
LIMIT_S = 300.0


@dataclass(frozen=True)
class Readiness(Record):
    """What dynamo did as a workload's first call was compiled with ``backend`` and called
    again as often as the test called it (at most twice)."""

    backend: str
    health: CompileHealth = field(metadata=codec(flatten=True, read=CompileHealth.from_dict))

    what: ClassVar[str] = "compile_readiness"

    def check(self) -> None:
        if self.backend not in BACKENDS:
            raise WorkloadDataError(
                f"field 'backend' must be one of {', '.join(BACKENDS)}, got {self.backend!r}"
            )


def readiness_agrees(old: Readiness | None, new: Readiness | None) -> bool:
    """As :func:`.health_agrees`; not checked on either side agrees with anything."""
    return old is None or new is None or health_agrees(old.health, new.health)


def readiness_lines(old: Readiness | None, new: Readiness | None) -> list[str]:
    """The health lines, each saying it is the readiness check's."""
    if old is None or new is None:
        return []
    lines = health_lines(old.health, new.health)
    if old.backend != new.backend:
        lines.insert(0, f"backend {old.backend} -> {new.backend}")
    return [f"compile readiness ({new.backend}): {line}" for line in lines]


@dataclass(frozen=True)
class ReadyCall:
    """A workload's first call, for the child to compile (``target``) and call (``run`` the
    compiled module, ``calls`` times: twice when the test called it more than once, so an
    attribute the forward changes shows as a recompile)."""

    target: nn.Module
    run: Callable[[nn.Module], object]
    calls: int


def check_readiness(
    calls: Sequence[ReadyCall], backend: str, rootdir: str | None, limit_s: float = LIMIT_S
) -> list[Readiness] | str:
    """Each call's readiness, compiled in one child in the test's order (a module compiled
    before recompiles for other inputs, as in the test); or why it was not checked."""
    if not hasattr(os, "fork"):
        return "not checked: this platform cannot fork a process to compile in"
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        _child(write_end, calls, backend, rootdir)
    os.close(write_end)
    answer, problem = _collect(read_end, pid, limit_s)
    if problem is not None:
        return f"not checked: {problem}"
    try:
        found = json.loads(answer)
        if "problem" in found:
            return f"not checked: {found['problem']}"
        return [Readiness(backend, CompileHealth.from_dict(h)) for h in found["health"]]
    except (ValueError, KeyError, TypeError, WorkloadDataError) as exc:
        return f"not checked: the compiling process answered what cannot be read ({exc})"


def _collect(read_end: int, pid: int, limit_s: float) -> tuple[bytes, str | None]:
    """What the child wrote, and why there is no answer (None: there is one)."""
    chunks: list[bytes] = []
    deadline = time.monotonic() + limit_s
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([read_end], [], [], left)[0]:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return b"", f"the compile took longer than {limit_s:.0f} s"
            chunk = os.read(read_end, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read_end)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        name = signal.Signals(os.WTERMSIG(status)).name
        return b"", f"the compiling process died ({name})"
    if not chunks:
        return b"", f"the compiling process exited with status {os.WEXITSTATUS(status)}"
    return b"".join(chunks), None


def _child(write_end: int, calls: Sequence[ReadyCall], backend: str, rootdir: str | None) -> None:
    status = 1
    try:
        # nothing to the parent's terminal or captured output
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115 (lives as long as the child)
        answer: dict[str, Json]
        try:
            answer = {"health": [h.to_dict() for h in _compiled_health(calls, backend, rootdir)]}
        except Exception as exc:
            first = (str(exc).strip().splitlines() or [""])[0]
            answer = {"problem": f"compiling raised {type(exc).__name__}: {first}"}
        data = json.dumps(answer).encode()
        while data:
            data = data[os.write(write_end, data) :]
        status = 0
    finally:
        os._exit(status)


def _compiled_health(
    calls: Sequence[ReadyCall], backend: str, rootdir: str | None
) -> list[CompileHealth]:
    import torch

    torch.set_num_threads(1)
    torch.compiler.reset()
    ids = graph_break_ids()
    compiled: dict[int, Any] = {}
    found = []
    for call in calls:
        module: Any = compiled.get(id(call.target))
        if module is None:
            module = compiled[id(call.target)] = torch.compile(call.target, backend=backend)
        observation = CallObservation(rootdir, ids)
        try:
            for _ in range(call.calls):
                call.run(module)
        finally:
            health = observation.end()
        found.append(health)
    return found
