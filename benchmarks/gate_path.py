"""The snapshot gate's path, as issue 35 measures it: follow the ``test`` argument from
``SnapshotGate.check`` through every call that passes it on.

A stop is a call of a function of pytest_workload or syrupy, made while the gate runs, that is
passed (``self`` included) the test's ``TestWorkloads``, one of its rows, or a value an earlier
stop returned (a record, or a container of records or of what it returned); the fields of a
record that are not rows (signatures, costs, modules) are its parts, not the test passed on. A
move is two consecutive stops in different modules; a move back is one into a module the path
had left. Also counted: the reads of the snapshot file in the run (an audit hook), and the
record types the path carries.

Each scenario runs one gated test in a pytester-like temporary directory, in a subprocess with
the checkout first on ``sys.path``: ``match`` (an unchanged test), ``change`` (a changed model:
the test fails with the mismatch) and ``update`` (the change, under ``--snapshot-update``).

    python benchmarks/gate_path.py [--baseline DIR] [--stops] [--quick]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

TEST = textwrap.dedent(
    """
    import pytest, torch
    from torch import nn

    @pytest.mark.workloads
    def test_model():
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        model(torch.rand(3, 4))
    """
)
SCENARIOS = ("match", "change", "update")


def _trace(args: list[str]) -> dict[str, Any]:
    """Run pytest on ``args`` in this process, tracing the gate's path."""
    import pytest

    from pytest_workload._snapshot import syrupy_ext

    gate = syrupy_ext.SnapshotGate
    original = gate.check
    tracked: dict[int, object] = {}
    parts: dict[int, object] = {}
    stops: list[tuple[str, str]] = []
    types: dict[str, None] = {}
    reads: list[str] = []

    def ours(module: str) -> bool:
        return module.startswith(("pytest_workload", "syrupy"))

    def record(value: object) -> bool:
        return ours(type(value).__module__) and hasattr(value, "__dataclass_fields__")

    def rows(value: object) -> bool:
        return isinstance(value, tuple | list) and any(record(v) for v in value)

    def table(value: object) -> bool:
        fields = getattr(value, "__dataclass_fields__", {})
        return record(value) and any(rows(getattr(value, f)) for f in fields)

    def track(value: object, *, returned: bool = False) -> None:
        if id(value) in tracked or id(value) in parts or value is None:
            return
        if isinstance(value, bool | int | float):
            return
        if record(value):
            tracked[id(value)] = value
            types.setdefault(type(value).__qualname__, None)
            for name in value.__dataclass_fields__:  # type: ignore[attr-defined]
                part = getattr(value, name)
                if rows(part) or table(part):
                    track(part)
                else:
                    parts[id(part)] = part
        elif rows(value) or (returned and isinstance(value, str | tuple | list | dict)):
            tracked[id(value)] = value
            for v in value.values() if isinstance(value, dict) else value:
                if record(v):
                    track(v)

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        if event == "call" and ours(frame.f_globals.get("__name__", "")):
            code = frame.f_code
            names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
            if any(id(frame.f_locals.get(n)) in tracked for n in names):
                stops.append((frame.f_globals["__name__"], code.co_qualname))
                return tracer
        elif event == "return" and arg is not None:
            track(arg, returned=True)
        return None if event == "call" else tracer

    def check(self: Any, snapshot: Any, test: Any, *args: Any, **kwargs: Any) -> Any:
        track(test)
        sys.settrace(tracer)
        try:
            return original(self, snapshot, test, *args, **kwargs)
        finally:
            sys.settrace(None)

    def audit(event: str, args: tuple[Any, ...]) -> None:
        mode = str(args[1] or "r") if event == "open" and len(args) > 1 else ""
        if event == "open" and str(args[0]).endswith(".workloads") and "r" in mode:
            reads.append(str(args[0]))

    gate.check = check  # type: ignore[method-assign]
    sys.addaudithook(audit)
    pytest.main(args)
    moves = back = 0
    left: set[str] = set()
    for (a, _), (b, _) in itertools.pairwise(stops):
        if a != b:
            moves += 1
            back += b in left
            left.add(a)
    return {
        "stops": [f"{m.removeprefix('pytest_workload.')}: {name}" for m, name in stops],
        "moves": moves,
        "back": back,
        "reads": len(reads),
        "types": list(types),
    }


def _scenario(which: str) -> None:
    """In a subprocess: write the snapshot, then trace the scenario's run; JSON on the last
    line of stdout."""
    import pytest

    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        Path("test_gate.py").write_text(TEST, encoding="utf-8")
        base = ["-q", "-p", "no:cacheprovider", "-p", "no:xdist", "--workload-snapshot"]
        pytest.main([*base, "--snapshot-update", "test_gate.py"])
        if which != "match":
            changed = TEST.replace("nn.Linear(8, 2)", "nn.Linear(8, 20)")
            Path("test_gate.py").write_text(changed, encoding="utf-8")
        sys.modules.pop("test_gate", None)  # (pytest.main imports it again)
        update = ["--snapshot-update"] if which == "update" else []
        found = _trace([*base, *update, "test_gate.py"])
    print("\n" + json.dumps(found))


def _run(checkout: Path, which: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    command = [sys.executable, __file__, "--scenario", which]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="another checkout, measured beside this")
    parser.add_argument("--stops", action="store_true", help="list each scenario's stops")
    parser.add_argument("--quick", action="store_true", help="the match scenario only")
    parser.add_argument("--scenario", choices=SCENARIOS, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.scenario:
        _scenario(options.scenario)
        return
    here = Path(__file__).resolve().parents[1]
    checkouts = [("this checkout", here)]
    if options.baseline is not None:
        checkouts.insert(0, ("baseline", options.baseline.resolve()))
    print(f"`python benchmarks/gate_path.py{' '.join(['', *sys.argv[1:]])}`\n")
    print("| checkout | scenario | stops | moves between modules | back | file reads | types |")
    print("|---|---|---:|---:|---:|---:|---|")
    for name, checkout in checkouts:
        for which in SCENARIOS[:1] if options.quick else SCENARIOS:
            found = _run(checkout, which)
            types = ", ".join(found["types"])
            print(
                f"| {name} | {which} | {len(found['stops'])} | {found['moves']} | "
                f"{found['back']} | {found['reads']} | {types} |"
            )
            if options.stops:
                print("\n".join(f"|   | | {stop} | | | | |" for stop in found["stops"]))


if __name__ == "__main__":
    main()
