"""Snapshots an older release wrote, without fields this one stores: still matching, explained
when they cannot tell a change apart, completed by --snapshot-update."""

from __future__ import annotations

import json

from tests.pytester_suite import lit

BODY = """
@pytest.mark.workloads
def test_cast():
    model = Net(KERNEL).eval().to(DTYPE)
    model(torch.rand(1, 3, 8, 8, dtype=DTYPE))
"""
OLD_RELEASE_LACKS = ("structure_hash_without_dtypes", "param_dtypes")


def _write(suite, dtype: str) -> None:
    suite(f"\nDTYPE = torch.{dtype}\n" + BODY)


def _strip(path) -> None:
    data = json.loads(path.read_text())
    for entry in data["workloads"]:
        for name in OLD_RELEASE_LACKS:
            del entry[name]
    path.write_text(json.dumps(data, indent=2))


def test_an_old_snapshot_matches_explains_and_is_completed_by_update(pytester, suite):
    _write(suite, "float32")
    pytester.runpytest("--workload-snapshot", "--snapshot-update").assert_outcomes(passed=1)
    stored = pytester.path / "__workload_snapshots__" / "test_models" / "test_cast.workloads"
    _strip(stored)
    pytester.runpytest("--workload-snapshot").assert_outcomes(passed=1)

    _write(suite, "bfloat16")
    old = pytester.runpytest("--workload-snapshot")
    old.assert_outcomes(failed=1)
    old.stdout.fnmatch_lines(
        lit(
            "      structure changed (structure hash * -> *)",
            "      the stored snapshot has no structure_hash_without_dtypes (an older release "
            "wrote it), so a dtype change cannot be told apart from a structure change",
        )
    )

    _write(suite, "float32")
    updated = pytester.runpytest("--workload-snapshot", "--snapshot-update")
    updated.assert_outcomes(passed=1)
    updated.stdout.fnmatch_lines(
        lit(
            "test_models.py::test_cast: added param_dtypes, structure_hash_without_dtypes to "
            "__workload_snapshots__*test_cast.workloads (an older release did not store them)"
        )
    )
    entry = json.loads(stored.read_text())["workloads"][0]
    assert entry["param_dtypes"] == ["float32"] and entry["structure_hash_without_dtypes"]

    _write(suite, "bfloat16")
    cast = pytester.runpytest("--workload-snapshot")
    cast.assert_outcomes(failed=1)
    cast.stdout.fnmatch_lines(
        lit("      parameter dtype float32 -> bfloat16 (structure otherwise the same)")
    )
