"""Faults and bad input: interrupted updates, unwritable or corrupt files, odd modules."""

from __future__ import annotations

import ast
import os
import pathlib
import pkgutil
import signal
import subprocess
import sys

import pytest
import torch
from torch import nn

import pytest_workload
from pytest_workload import WorkloadRecorder
from pytest_workload._core.files import SNAPSHOT_FORMAT
from tests.pytester_suite import lit, two_shapes

KILLED = """

@pytest.mark.workloads
def test_then_killed():
    import os, signal
    Net()(torch.rand(1, 3, 4, 4))
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_killed_update_leaves_every_snapshot_old_or_new(pytester, suite):
    suite(two_shapes() + two_shapes(size=12).replace("test_two_shapes", "test_other"))
    pytester.runpytest("--workload-snapshot", "--snapshot-update").assert_outcomes(passed=2)
    folder = pytester.path / "__workload_snapshots__" / "test_models"
    old = {p.name: p.read_text() for p in folder.iterdir()}
    suite(
        two_shapes(size=20) + two_shapes(size=24).replace("test_two_shapes", "test_other") + KILLED
    )
    pytester.runpytest_subprocess("--workload-snapshot", "--snapshot-update", "-p", "no:xdist")
    new = {p.name: p.read_text() for p in folder.iterdir()}
    assert set(new) == set(old)  # no temporary files left behind
    assert new["test_two_shapes.workloads"] != old["test_two_shapes.workloads"]  # written: new
    assert "[1, 3, 20, 20]" in new["test_two_shapes.workloads"]
    assert "[1, 3, 24, 24]" in new["test_other.workloads"]
    pytester.runpytest("--workload-snapshot", "-k", "not killed").assert_outcomes(passed=2)


SIX = """
@pytest.mark.workloads
@pytest.mark.parametrize("n", range(6))
def test_six(n):
    import os
    if n == 3 and os.path.exists("kill"):
        os.kill(os.getpid(), 9)
    nn.Linear(2, n + 1)(torch.rand(1, 2))
"""


def _snapshot_bytes(pytester):
    folder = pytester.path / "__workload_snapshots__"
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*.*"))}


def test_a_crashed_xdist_worker_deletes_no_snapshot_and_says_so(pytester, suite):
    suite(SIX)
    update = ("-n", "2", "-p", "no:randomly", "--workload-snapshot", "--snapshot-update", "-rA")
    (pytester.path / "kill").touch()
    first = pytester.runpytest_subprocess(*update)
    first.assert_outcomes(passed=5, failed=1)
    written = _snapshot_bytes(pytester)
    # each passed test's snapshot is written as it passes: the crash loses none of them
    assert sorted(written) == [f"test_models/test_six[{n}].workloads" for n in (0, 1, 2, 4, 5)]
    (pytester.path / "kill").unlink()
    pytester.runpytest_subprocess(*update).assert_outcomes(passed=6)
    written = _snapshot_bytes(pytester)
    assert len(written) == 6
    (pytester.path / "kill").touch()
    crashed = pytester.runpytest_subprocess(*update)
    crashed.assert_outcomes(passed=5, failed=1)
    assert _snapshot_bytes(pytester) == written
    crashed.stdout.fnmatch_lines(
        lit(
            "xdist worker gw* sent no workload data (it crashed or was killed): the workloads "
            "of its * tests are missing from this report (*test_models.py::test_six[3]*); no "
            "snapshot was deleted as unused, since its tests' uses are unknown (as with "
            "--snapshot-no-cleanup)"
        )
    )
    assert "deleted." not in crashed.stdout.str()


def test_an_unwritable_snapshot_location_is_a_clear_error(pytester, suite):
    suite(two_shapes())
    # root may write anywhere, so block the file with a directory of the same name
    blocker = pytester.path / "__workload_snapshots__" / "test_models" / "test_two_shapes.workloads"
    (blocker / "keep").mkdir(parents=True)
    result = pytester.runpytest("--workload-snapshot", "--snapshot-update")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        lit(
            "workload snapshot __workload_snapshots__*test_two_shapes.workloads could not be "
            "*Is a directory*"
        )
    )
    assert (blocker / "keep").is_dir()


@pytest.mark.parametrize(
    ("field", "now", "says"),
    [
        (
            "pytest_workload_snapshot",
            SNAPSHOT_FORMAT,
            f"snapshot format {SNAPSHOT_FORMAT + 1} (this release reads format {SNAPSHOT_FORMAT})",
        ),
        ("fingerprint_scheme", 1, "fingerprint scheme 2 (this release computes scheme 1)"),
    ],
)
@pytest.mark.parametrize("update", [(), ("--snapshot-update",)], ids=["check", "update"])
def test_a_snapshot_from_a_future_release_is_an_error_and_untouched(
    pytester, suite, field, now, says, update
):
    suite(two_shapes())
    pytester.runpytest("--workload-snapshot", "--snapshot-update").assert_outcomes(passed=1)
    stored = pytester.path / "__workload_snapshots__" / "test_models" / "test_two_shapes.workloads"
    text = stored.read_text().replace(f'"{field}": {now}', f'"{field}": {now + 1}')
    stored.write_text(text)
    result = pytester.runpytest("--workload-snapshot", *update)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        lit(f"workload snapshot __workload_snap**test_two_shapes.workloads was written by {says}*")
    )
    assert stored.read_text() == text


FAILS_AFTER_RECORDING = """

@pytest.mark.workloads
def test_fails():
    Net()(torch.rand(1, 3, 4, 4))
    raise AssertionError("the test's own failure")
"""


def _stored(pytester) -> dict[str, str]:
    folder = pytester.path / "__workload_snapshots__" / "test_models"
    return {p.name: p.read_text() for p in folder.iterdir()}


def test_an_update_keeps_the_snapshot_of_a_test_that_failed(pytester, suite):
    suite(two_shapes() + FAILS_AFTER_RECORDING.replace("raise", "pass  #"))
    pytester.runpytest("--workload-snapshot", "--snapshot-update").assert_outcomes(passed=2)
    old = _stored(pytester)
    suite(two_shapes(size=20) + FAILS_AFTER_RECORDING)
    result = pytester.runpytest("--workload-snapshot", "--snapshot-update")
    result.assert_outcomes(passed=1, failed=1)
    new = _stored(pytester)
    assert new["test_fails.workloads"] == old["test_fails.workloads"]
    assert new["test_two_shapes.workloads"] != old["test_two_shapes.workloads"]


@pytest.mark.parametrize(
    ("stop", "how"),
    [
        ("-x", 'raise AssertionError("stop here")'),
        ("-p no:randomly", "raise KeyboardInterrupt"),
    ],
    ids=["exitfirst", "interrupted"],
)
def test_an_update_cut_short_deletes_no_snapshot(pytester, suite, stop, how):
    later = two_shapes(size=12).replace("test_two_shapes", "test_z_later")
    suite(FAILS_AFTER_RECORDING.replace("raise", "pass  #") + two_shapes() + later)
    pytester.runpytest("--workload-snapshot", "--snapshot-update").assert_outcomes(passed=3)
    old = _stored(pytester)
    first = FAILS_AFTER_RECORDING.replace('raise AssertionError("the test\'s own failure")', how)
    suite(first + two_shapes(size=20) + later.replace("12", "24"))
    pytester.runpytest_subprocess(
        "--workload-snapshot", "--snapshot-update", "-p", "no:xdist", *stop.split()
    )
    assert _stored(pytester) == old


@pytest.mark.parametrize("update", [(), ("--snapshot-update",)], ids=["check", "update"])
def test_without_the_gate_stored_snapshots_are_used_not_unused(pytester, suite, update):
    suite(two_shapes())
    pytester.runpytest("--workload-snapshot", "--snapshot-update").assert_outcomes(passed=1)
    old = _stored(pytester)
    suite(two_shapes(size=20))  # changed, but nothing checks it without the gate
    result = pytester.runpytest(*update)
    result.assert_outcomes(passed=1)
    assert result.ret == 0
    result.stdout.no_fnmatch_line("* unused.*")
    result.stdout.no_fnmatch_line("*Deleted*")
    assert _stored(pytester) == old


#: Modules that turn bytes into objects by running what the bytes say.
UNPICKLERS = frozenset({"pickle", "_pickle", "marshal", "shelve", "dill", "cloudpickle", "joblib"})
#: ``<module>.load`` calls that unpickle (``numpy.load`` may, with ``allow_pickle``).
UNPICKLING_LOADS = frozenset({"torch", "np", "numpy"})


def unpickling(source: str) -> list[str]:
    """What in a module's source may unpickle: an import of an unpickler, a ``torch.load``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] in UNPICKLERS]
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            top = node.module.split(".")[0]
            if top in UNPICKLERS or (
                top in UNPICKLING_LOADS and "load" in {a.name for a in node.names}
            ):
                found.append(node.module)
        elif (
            isinstance(node, ast.Attribute)
            and node.attr == "load"
            and isinstance(node.value, ast.Name)
            and node.value.id in UNPICKLING_LOADS
        ):
            found.append(f"{node.value.id}.load")
    return found


@pytest.mark.parametrize(
    "source",
    [
        "import pickle",
        "import dill as d",
        "from _pickle import loads",
        "def f():\n    import marshal",
        "import torch\ntorch.load(path)",
        "from torch import load",
        "import numpy as np\nnp.load(path, allow_pickle=True)",
    ],
)
def test_the_unpickle_guard_finds(source):
    assert unpickling(source)


def test_nothing_is_ever_unpickled():
    package = pathlib.Path(pytest_workload.__file__).parent
    sources = sorted(package.rglob("*.py"))
    modules = {m.name for m in pkgutil.walk_packages(pytest_workload.__path__, "pytest_workload.")}
    assert len(sources) == len(modules) + 1  # every module, and the package's __init__
    for source in sources:
        found = unpickling(source.read_text())
        assert not found, f"{source.relative_to(package)} may unpickle: {found}"


def record(fn, max_depth=0):
    recorder = WorkloadRecorder("t", max_depth=max_depth, timing=False)
    with recorder.recording(all_roots=True):
        fn()
    return recorder


def test_a_module_that_builds_itself_in_forward_is_hashed_as_built():
    lazy = nn.LazyLinear(3)
    recorder = record(lambda: [lazy(torch.rand(2, 5)), lazy(torch.rand(2, 5))])
    (workload,) = recorder.workloads()
    assert workload.params.count == 5 * 3 + 3
    assert workload.calls == 2
    assert workload.structure_hash == pytest_workload.structure_hash(lazy)


def test_a_module_that_grows_in_forward_is_a_new_workload_each_time_it_grows():
    class Growing(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList()

        def forward(self, x):
            self.layers.append(nn.Identity())
            return x

    model = Growing()
    recorder = record(lambda: [model(torch.rand(1)), model(torch.rand(1))])
    first, second = recorder.workloads()
    assert (first.calls, second.calls) == (1, 1)
    assert first.structure_hash != second.structure_hash  # each read after its call grew it
    assert second.structure_hash == pytest_workload.structure_hash(model)
    assert len(model.layers) == 2


def test_a_generator_input_is_an_error_and_is_not_consumed():
    class Takes(nn.Module):
        def forward(self, items):
            return sum(items)

    items = (i for i in range(3))
    recorder = WorkloadRecorder("t")
    with recorder.recording(all_roots=True):
        assert Takes()(items) == 3
    (error,) = recorder.errors
    assert "args[0] of type builtins.generator" in error


def test_a_module_class_with_eq_and_no_hash_is_one_clear_line():
    class Compared(nn.Module):  # __eq__ without __hash__: torch's named_modules cannot walk it
        def __init__(self):
            super().__init__()
            self.inner = nn.Linear(2, 2)

        def __eq__(self, other):
            return self is other

        def forward(self, x):
            return self.inner(x)

    recorder, model = WorkloadRecorder("t"), Compared()
    with recorder.recording(all_roots=True):
        model(torch.rand(1, 2))
        assert not model._forward_pre_hooks_with_kwargs  # (the watch's hand-over taken back)
    (error,) = recorder.errors
    assert "internal error" not in error
    assert "\n" not in error
    assert "__eq__ without __hash__" in error
    assert "__hash__ = torch.nn.Module.__hash__" in error


def test_the_workloads_fixture_asked_for_inside_the_test_is_one_clear_line(pytester, suite):
    suite("""
def test_late(request):
    request.getfixturevalue("workloads")
""")
    result = pytester.runpytest("-p", "no:xdist")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*the workloads fixture must be a test argument*"])
    result.stdout.no_fnmatch_line("*AssertionError*")
    result.stdout.no_fnmatch_line("*Traceback*")


def test_merge_interrupted_is_one_line_and_exit_130(tmp_path):
    fifo = tmp_path / "shard.json"  # its reader blocks in read() until the writer goes
    os.mkfifo(fifo)
    child = subprocess.Popen(
        [sys.executable, "-m", "pytest_workload", "merge", str(fifo), "--output", "m.json"],
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
        # (a suite started in the background by a shell ignores SIGINT, and so would the child)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    with open(fifo, "w") as writer:  # opens once the child has opened it to read
        writer.write("{")
        writer.flush()
        child.send_signal(signal.SIGINT)
    # (closed only now: where another thread of the child took the signal, its main thread
    # sees it once its read returns; the JSON read is "{", never a whole file)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 130, err
    assert err == "python -m pytest_workload merge: interrupted\n"
    assert not (tmp_path / "m.json").exists()
