"""Fault injection on every file pytest-workload writes: names that collide, special files,
modes, failing tests under --snapshot-update, unwritable paths, future and nonsense baselines,
and syrupy run without the plugin. Reading faults are in test_file_reading.py.

Where data could be lost, each test compares the exact bytes before and after. Numbers in the
section comments are the points of the file-safety issue.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import threading

import pytest
import torch

from pytest_workload._core.errors import FileWriteError
from pytest_workload._core.files import BASELINE_FORMAT, write_text_atomic
from pytest_workload._snapshot.snapshot_files import NAME_MAX, SNAPSHOT_SUFFIX, snapshot_stem
from tests.file_faults import GATE, UPDATE, deny_writes_under, no_traceback, snapshots, stored
from tests.pytester_suite import lit, two_shapes

# 1. Injective snapshot names, within the file-name limit -------------------------------------


def test_escaped_names_are_injective_and_fit_the_limit():
    names = ["test_id[a/b]", "test_id[ab]", "test_id[a%2Fb]", "test_id[a b]", "test_id[a\nb]"]
    stems = [snapshot_stem(n) for n in names]
    assert len(set(stems)) == len(names)
    assert stems[0] == "test_id[a%2Fb]" and stems[2] == "test_id[a%252Fb]"
    long = [f"test_long[{'x' * 400}{i}]" for i in range(2)] + [f"test_long[{'é' * 300}]"]
    for name in long:
        stem = snapshot_stem(name)
        assert len((stem + SNAPSHOT_SUFFIX).encode()) <= NAME_MAX and "~" in stem
    assert len({snapshot_stem(n) for n in long}) == len(long)


def test_a_name_at_the_limit_is_written_with_its_temporary_file(tmp_path):
    path = tmp_path / ("n" * (NAME_MAX - len(".json")) + ".json")
    write_text_atomic(path, "{}\n")
    assert path.read_bytes() == b"{}\n"
    assert os.listdir(tmp_path) == [path.name]


IDS = """
@pytest.mark.workloads
@pytest.mark.parametrize("n", [2, 3], ids=["a/b", "ab"])
def test_id(n):
    Net()(torch.rand(1, 3, 4 * n, 4 * n))


@pytest.mark.workloads
@pytest.mark.parametrize("n", [2], ids=["y" * 300])
def test_long(n):
    Net()(torch.rand(1, 3, 4, 4))
"""


def test_colliding_ids_get_their_own_snapshots(pytester, suite):
    suite(IDS)
    pytester.runpytest(*UPDATE).assert_outcomes(passed=3)
    written = snapshots(pytester)
    assert len(written) == 3
    assert "__workload_snapshots__/test_models/test_id[a%2Fb].workloads" in written
    assert b"[1, 3, 8, 8]" in written["__workload_snapshots__/test_models/test_id[a%2Fb].workloads"]
    assert b"[1, 3, 12, 12]" in written["__workload_snapshots__/test_models/test_id[ab].workloads"]
    pytester.runpytest(*GATE).assert_outcomes(passed=3)
    pytester.runpytest(*UPDATE).assert_outcomes(passed=3)
    assert snapshots(pytester) == written


# 2. --workload-json onto special files -------------------------------------------------------


def test_json_through_a_symlink_writes_its_target(pytester, suite):
    suite(two_shapes())
    target = pytester.path / "reports" / "real.json"
    target.parent.mkdir()
    target.write_text("old\n")
    link = pytester.path / "report.json"
    link.symlink_to(target)
    pytester.runpytest(f"--workload-json={link}").assert_outcomes(passed=1)
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert json.loads(target.read_text())["tests"][0]["nodeid"].endswith("test_two_shapes")


def test_json_into_a_fifo_is_written_not_replaced(pytester, suite):
    suite(two_shapes())
    fifo = pytester.path / "report.fifo"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    pytester.runpytest(f"--workload-json={fifo}").assert_outcomes(passed=1)
    reader.join(timeout=60)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert json.loads(received[0])["schema_version"] == 1


def test_json_onto_a_character_device_is_written_not_replaced(pytester, suite):
    suite(two_shapes())
    device = pytester.path / "null"
    try:  # a private /dev/null: the test never touches the system's own device
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("creating a device node needs root")
    pytester.runpytest(f"--workload-json={device}").assert_outcomes(passed=1)
    assert stat.S_ISCHR(os.lstat(device).st_mode)
    assert os.listdir(pytester.path).count("null") == 1


def test_json_to_stdout(pytester, suite):
    suite(two_shapes())
    result = pytester.runpytest_subprocess("--workload-json=-", "-p", "no:xdist")
    result.assert_outcomes(passed=1)
    assert not (pytester.path / "-").exists()
    result.stdout.fnmatch_lines(['  "schema_version": 1,'])


# 3. Modes ------------------------------------------------------------------------------------


def test_an_existing_file_keeps_its_mode_and_a_new_one_follows_the_umask(tmp_path):
    kept = tmp_path / "kept.json"
    kept.write_text("old\n")
    kept.chmod(0o644)
    write_text_atomic(kept, "new\n")
    assert stat.S_IMODE(kept.stat().st_mode) == 0o644 and kept.read_text() == "new\n"
    old_mask = os.umask(0o027)
    try:
        write_text_atomic(tmp_path / "new.json", "{}\n")
    finally:
        os.umask(old_mask)
    assert stat.S_IMODE((tmp_path / "new.json").stat().st_mode) == 0o640


def test_an_updated_snapshot_keeps_its_mode(pytester, suite):
    suite(two_shapes())
    pytester.runpytest(*UPDATE).assert_outcomes(passed=1)
    stored(pytester).chmod(0o664)
    suite(two_shapes(size=20))
    pytester.runpytest(*UPDATE).assert_outcomes(passed=1)
    assert b"[1, 3, 20, 20]" in stored(pytester).read_bytes()
    assert stat.S_IMODE(stored(pytester).stat().st_mode) == 0o664


# 4. A test that does not pass keeps its snapshot under --snapshot-update ----------------------

FAILING = {
    "its own assert": """
@pytest.mark.workloads(max_depth=1)
def test_two_shapes():
    Net(KERNEL).eval()(torch.rand(1, 3, 20, 20))
    assert False, "the test's own failure"
""",
    "an undescribable input": """
@pytest.mark.workloads(max_depth=1)
def test_two_shapes():
    Net(KERNEL).eval()(torch.rand(1, 3, 20, 20), scale=object())
""",
}

COLLAPSING_KEY = """
import pytest
import torch

@pytest.hookimpl(optionalhook=True)
def pytest_workload_key(module, args, kwargs):
    return "one key for every workload"
"""


@pytest.mark.parametrize("why", list(FAILING))
def test_a_failing_test_keeps_its_snapshot(pytester, suite, why):
    suite(two_shapes())
    pytester.runpytest(*UPDATE).assert_outcomes(passed=1)
    before = snapshots(pytester)
    suite(FAILING[why])
    pytester.runpytest(*UPDATE).assert_outcomes(failed=1)
    assert snapshots(pytester) == before


def test_a_key_collapse_keeps_the_snapshot(pytester, suite):
    suite(two_shapes())
    pytester.runpytest(*UPDATE).assert_outcomes(passed=1)
    before = snapshots(pytester)
    pytester.makeconftest(COLLAPSING_KEY)
    suite(two_shapes(size=20))
    result = pytester.runpytest(*UPDATE)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(lit("*user key collapse*"))
    assert snapshots(pytester) == before


# 5. Clear errors instead of tracebacks -------------------------------------------------------


def test_json_onto_a_directory_is_one_line_after_the_summary(pytester, suite):
    suite(two_shapes())
    (pytester.path / "out").mkdir()
    result = pytester.runpytest("--workload-json=out")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        [
            "pytest-workload: JSON report not written: cannot write */out: Is a directory",
            "*1 passed*",
        ]
    )
    no_traceback(result)
    assert os.listdir(pytester.path / "out") == []


def test_json_into_a_read_only_directory_is_one_line(pytester, suite, monkeypatch):
    suite(two_shapes())
    (pytester.path / "ro").mkdir()
    (pytester.path / "ro" / "report.json").write_bytes(b"kept\n")
    deny_writes_under(monkeypatch, pytester.path / "ro")
    result = pytester.runpytest("--workload-json=ro/report.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        ["*JSON report not written: cannot write */ro/report.json: Permission denied", "*1 passed*"]
    )
    no_traceback(result)
    assert (pytester.path / "ro" / "report.json").read_bytes() == b"kept\n"


def test_a_read_only_baselines_directory_is_one_line(pytester, suite, monkeypatch):
    suite(two_shapes())
    deny_writes_under(monkeypatch, pytester.path / "__workload_baselines__")
    result = pytester.runpytest(*UPDATE, "--workload-perf=strict", "-p", "no:xdist")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        lit(
            "*timing baseline not written: cannot write *__workload_baselines__*: Permission denied"
        )
    )
    assert "PermissionError" not in result.stdout.str()


def test_write_errors_are_one_line_naming_the_path(tmp_path):
    with pytest.raises(FileWriteError) as raised:
        write_text_atomic(tmp_path, "x")
    assert str(raised.value) == f"cannot write {tmp_path}: Is a directory"


# 6. Future and nonsense baselines ------------------------------------------------------------

PERF = ("--workload-snapshot", "--workload-perf=strict", "-p", "no:xdist")


def _baseline_files(pytester):
    return sorted((pytester.path / "__workload_baselines__").rglob("*.json"))


def test_a_future_baseline_is_left_alone_under_update(pytester, suite):
    suite(two_shapes())
    pytester.runpytest(*PERF, "--snapshot-update").assert_outcomes(passed=1)
    path = _baseline_files(pytester)[0]
    now, later = BASELINE_FORMAT, BASELINE_FORMAT + 1
    future = path.read_text().replace(
        f'"pytest_workload_baseline": {now}', f'"pytest_workload_baseline": {later}'
    )
    assert future != path.read_text()
    path.write_text(future)
    result = pytester.runpytest(*PERF, "--snapshot-update")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        lit(
            f"*timing baseline *.json: is of baseline format {later} "
            f"(this release reads format {now})*"
        )
    )
    assert path.read_text() == future


@pytest.mark.parametrize(
    ("field", "value"),
    [('"median_s": ', "Infinity"), ('"ci95_s": [', "1e999, "), ('"n": ', "-3")],
    ids=["median Infinity", "interval inf", "negative n"],
)
def test_a_nonsense_baseline_is_corrupt_and_refreshed_under_update(
    pytester, suite, injected, field, value
):
    # (the other shape is judged against its sound baseline: timed by the injected stopwatch)
    suite(two_shapes())
    pytester.runpytest(*PERF, "--snapshot-update").assert_outcomes(passed=1)
    path = _baseline_files(pytester)[0]
    text = path.read_text()
    start = text.index(field) + len(field)
    end = text.index(",", start) + (2 if field.endswith("[") else 0)  # one number replaced
    nonsense = text[:start] + value + text[end:]
    path.write_text(nonsense)
    result = pytester.runpytest(*PERF)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(lit("*corrupt timing baseline *.json: *"))
    assert path.read_text() == nonsense
    pytester.runpytest(*PERF, "--snapshot-update").assert_outcomes(passed=1)
    assert json.loads(path.read_text())["timing"]["n"] >= 1


def test_one_corrupt_baseline_does_not_fail_other_tests(pytester, suite, injected):
    suite(two_shapes())
    pytester.runpytest(*PERF, "--snapshot-update").assert_outcomes(passed=1)
    path = _baseline_files(pytester)[0]
    corrupt = path.parent / ("0" * 64 + ".json")
    corrupt.write_bytes(b"not json\n")
    suite(two_shapes(size=20))
    pytester.runpytest(*UPDATE, "--workload-perf=off").assert_outcomes(passed=1)
    # the first shape is timed against its real baseline, by the injected stopwatch: no slowdown
    # the machine's load could cause may decide this test, which is about the corrupt file beside it
    result = pytester.runpytest(*PERF, "--workload-json=r.json")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["1 timing baseline unreadable: left out of nearest-shape lookups"])
    texts = [n["text"] for n in json.loads((pytester.path / "r.json").read_text())["notes"]]
    assert any(
        f"{corrupt.name}: is not valid JSON" in t and "left out of nearest" in t for t in texts
    )
    assert corrupt.read_bytes() == b"not json\n"


# Issue 13: a run without the plugin never deletes workload snapshots -------------------------


def test_syrupy_without_the_plugin_deletes_no_workload_snapshot(pytester, suite):
    suite(two_shapes() + "\n\ndef test_plain(snapshot):\n    assert snapshot == 1\n")
    pytester.runpytest(*UPDATE).assert_outcomes(passed=2)
    before = snapshots(pytester)
    assert len(before) == 1
    result = pytester.runpytest("-p", "no:workload", "--snapshot-update")
    result.assert_outcomes(passed=2)
    assert "Deleted" not in result.stdout.str()
    assert snapshots(pytester) == before


# 7. Writes never leave the rootdir -----------------------------------------------------------


def test_a_write_through_a_symlink_out_of_its_root_is_refused_naming_both(tmp_path):
    root, away = tmp_path / "root", tmp_path / "away"
    root.mkdir()
    away.mkdir()
    (away / "file.json").write_bytes(b"kept\n")
    (root / "link.json").symlink_to(away / "file.json")
    (root / "dir").symlink_to(away)
    for path in (root / "link.json", root / "dir" / "new" / "file.json"):
        with pytest.raises(FileWriteError) as raised:
            write_text_atomic(path, "{}\n", within=root)
        real = os.path.realpath(path)
        assert str(raised.value) == (
            f"cannot write {path}: it leads to {real}, outside {root}; nothing is written there"
        )
    assert sorted(os.listdir(away)) == ["file.json"]
    assert (away / "file.json").read_bytes() == b"kept\n"
    (root / "inside.json").symlink_to(root / "real.json")
    write_text_atomic(root / "inside.json", "{}\n", within=root)
    assert (root / "real.json").read_bytes() == b"{}\n"


def test_a_snapshot_symlink_out_of_the_rootdir_is_refused_and_left(pytester, suite, mode):
    suite(two_shapes())
    pytester.runpytest(*UPDATE).assert_outcomes(passed=1)
    outside = pytester.path.parent / f"{pytester.path.name}-outside.json"
    outside.write_bytes(b"not a snapshot\n")
    link = stored(pytester)
    os.unlink(link)
    os.symlink(outside, link)
    for args in (UPDATE, GATE):
        result = pytester.runpytest(*mode, *args)
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(
            [
                "*workload snapshot __workload_snapshots__/test_models/test_two_shapes.workloads "
                f"leads to {outside}, outside the rootdir {pytester.path}: it is left as it is*"
            ]
        )
        no_traceback(result)
        assert os.readlink(link) == str(outside)
        assert outside.read_bytes() == b"not a snapshot\n"


def test_a_snapshot_directory_out_of_the_rootdir_gets_nothing(pytester, suite):
    suite(two_shapes())
    away = pytester.path.parent / f"{pytester.path.name}-away"
    away.mkdir()
    (pytester.path / "__workload_snapshots__").symlink_to(away)
    result = pytester.runpytest(*UPDATE)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*leads to {away}/test_models/test_two_shapes.workloads*"])
    assert list(away.iterdir()) == []


def test_a_baseline_directory_symlinked_out_of_the_rootdir_gets_nothing(pytester, suite):
    suite(two_shapes())
    away = pytester.path.parent / f"{pytester.path.name}-baselines"
    away.mkdir()
    (pytester.path / "__workload_baselines__").symlink_to(away)
    result = pytester.runpytest(*UPDATE, "--workload-perf=strict", "-p", "no:xdist")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [f"*timing baseline not written: cannot write *: it leads to {away}/*, outside *"]
    )
    assert list(away.iterdir()) == []


# 8. What is written reads back -------------------------------------------------------------

HUGE = """
class Huge:
    pass


class Takes(nn.Module):
    def forward(self, x, extra):
        return x


class Wide(Net):
    def __init__(self):
        super().__init__()
        self.big = 10**70


@pytest.mark.workloads
def test_huge_input():
    Takes()(torch.rand(1, 3, 8, 8), Huge())


@pytest.mark.workloads
def test_huge_attribute():
    Wide()(torch.rand(1, 3, 8, 8))
"""

HUGE_HOOK = """
from test_models import Huge


def pytest_workload_describe(value):
    return {"n": 10**70} if isinstance(value, Huge) else None
"""


def test_a_value_no_reader_accepts_is_refused_with_its_path_and_never_written(
    pytester, suite, mode
):
    suite(HUGE)
    pytester.makeconftest(HUGE_HOOK)
    stored(pytester, "test_huge_input").parent.mkdir(parents=True)
    kept = stored(pytester, "test_huge_input")
    kept.write_bytes(b"the user's own bytes\n")
    result = pytester.runpytest(*mode, *UPDATE, "--workload-json=r.json")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        lit(
            "*could not record: Takes * cannot describe input args[1] of type test_models.Huge: "
            'pytest_workload_describe returned an integer of more than 64 digits at ["n"], '
            "which no snapshot may hold"
        )
    )
    assert kept.read_bytes() == b"the user's own bytes\n"
    written = snapshots(pytester)
    assert (
        b'"big": "0x' in written["__workload_snapshots__/test_models/test_huge_attribute.workloads"]
    )
    again = pytester.runpytest(*mode, *UPDATE, "--workload-json=r.json")
    again.assert_outcomes(passed=1, failed=1)
    assert snapshots(pytester) == written
    pytester.runpytest(*mode, *GATE, "-k", "attribute").assert_outcomes(passed=1)
    compared = pytester.run(sys.executable, "-m", "pytest_workload", "compare", "r.json", "r.json")
    assert compared.ret == 0


def test_a_key_no_reader_accepts_is_refused_naming_the_hook():
    from torch import nn

    from pytest_workload import WorkloadRecorder

    recorder = WorkloadRecorder("t.py::test", max_depth=0, keyer=lambda *_: [10**70])
    with recorder.recording(all_roots=True):
        nn.Linear(2, 2)(torch.rand(1, 2))
    assert recorder.errors == (
        "pytest_workload_key returned an integer of more than 64 digits at [0] for Linear",
    )
