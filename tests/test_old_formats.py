"""Files of an older format or fingerprint scheme than this release reads (every number starts
at 1, so 0 stands for the first release's files read by a later one): each is one line that
says what it is and the command that regenerates it, never a crash."""

from __future__ import annotations

import json

from pytest_workload import SessionReport
from pytest_workload.__main__ import main
from tests.file_faults import GATE, UPDATE, no_traceback, stored
from tests.pytester_suite import lit, two_shapes

PERF = ("--workload-snapshot", "--workload-perf=strict", "-p", "no:xdist")


def test_an_old_snapshot_format_is_one_line_and_regenerated_by_update(pytester, suite):
    suite(two_shapes())
    pytester.runpytest(*UPDATE).assert_outcomes(passed=1)
    current = stored(pytester).read_text()
    stored(pytester).write_text(
        current.replace('"pytest_workload_snapshot": 1', '"pytest_workload_snapshot": 0')
    )
    result = pytester.runpytest(*GATE)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        lit(
            "*workload snapshot __workload_snapshots__*test_two_shapes.workloads is of snapshot "
            "format 0, older than this release reads (format 1); regenerate it with "
            "`pytest --workload-snapshot --snapshot-update`"
        )
    )
    no_traceback(result)
    pytester.runpytest(*UPDATE).assert_outcomes(passed=1)
    assert stored(pytester).read_text() == current


def test_an_old_report_is_one_line(tmp_path, capsys):
    data = SessionReport(scheme=1, tests=()).to_dict()
    current, old = tmp_path / "head.json", tmp_path / "base.json"
    current.write_text(json.dumps(data))
    old.write_text(json.dumps({**data, "schema_version": 0}))
    assert main(["compare", str(old), str(current)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line == (
        f"error: {old}: is of report schema_version 0, older than this release reads (1); "
        f"regenerate it with `pytest --workload-json={old}`"
    )


def test_an_old_baseline_format_is_one_line_and_rewritten_by_update(pytester, suite, injected):
    # (the other shape is judged against its current baseline: timed by the injected stopwatch)
    suite(two_shapes())
    pytester.runpytest(*PERF, "--snapshot-update").assert_outcomes(passed=1)
    path = sorted((pytester.path / "__workload_baselines__").rglob("*.json"))[0]
    path.write_text(
        path.read_text().replace('"pytest_workload_baseline": 1', '"pytest_workload_baseline": 0')
    )
    result = pytester.runpytest(*PERF)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        lit(
            "*timing baseline *.json: is of baseline format 0, older than this release reads "
            "(format 1); rewrite it with `pytest --workload-snapshot --snapshot-update "
            "-p no:xdist`*"
        )
    )
    no_traceback(result)
    pytester.runpytest(*PERF, "--snapshot-update").assert_outcomes(passed=1)
    assert json.loads(path.read_text())["pytest_workload_baseline"] == 1


def test_a_snapshot_of_an_older_scheme_is_one_line_and_regenerated_by_update(pytester, suite):
    suite(two_shapes())
    pytester.runpytest(*UPDATE).assert_outcomes(passed=1)
    current = stored(pytester).read_text()
    stored(pytester).write_text(
        current.replace('"fingerprint_scheme": 1', '"fingerprint_scheme": 0')
    )
    result = pytester.runpytest(*GATE)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        lit(
            "*workload snapshot __workload_snapshots__*test_two_shapes.workloads is of "
            "fingerprint scheme 0, older than this release reads (scheme 1); regenerate it "
            "with `pytest --workload-snapshot --snapshot-update`"
        )
    )
    no_traceback(result)
    accepted = pytester.runpytest(*UPDATE, "--workload-accept-upgrade")
    accepted.assert_outcomes(failed=1)  # not an upgrade: left as it is
    assert '"fingerprint_scheme": 0' in stored(pytester).read_text()
    pytester.runpytest(*UPDATE).assert_outcomes(passed=1)
    assert stored(pytester).read_text() == current
