"""pytest-workload: fingerprint ML workloads and gate CI on their regressions.

A workload is one module structure called with one input signature. Its hash comes from the
structure and the input shapes, dtypes and scalar values, never from weights.

Most users only run the plugin (``pytest --workload-snapshot``, ``--workload-json``). The
names this package exports are for code outside pytest: a CI script that reads a report, a
model zoo that records its models, a cache keyed by workload hashes.

Example:
    Read a ``--workload-json`` report and list each workload's hash and median time:

    ```python
    from pathlib import Path

    from pytest_workload import read_report

    report = read_report(Path("workloads.json"))
    for test in report.tests:
        for workload in test:
            median = workload.timing.median_s if workload.timing else None
            print(test.nodeid, workload.name, workload.hash, median)
    ```

Everything not listed in ``__all__`` is private: the ``_``-prefixed packages may change in any
release.
"""

from __future__ import annotations

from ._core.errors import WorkloadError, WorkloadWarning
from ._fingerprint.distance import distance_factor, nearest
from ._fingerprint.structure import structure_hash
from ._recording.recorder import WorkloadRecorder
from ._report.session_report import SessionReport, read_report
from ._workload.signature import InputSignature
from ._workload.timing import Timing
from ._workload.workload import TestWorkloads, Workload

#: The installed release; `[project] version` in `pyproject.toml` reads it from here.
__version__ = "0.1.0"

__all__ = [
    "InputSignature",
    "SessionReport",
    "TestWorkloads",
    "Timing",
    "Workload",
    "WorkloadError",
    "WorkloadRecorder",
    "WorkloadWarning",
    "distance_factor",
    "nearest",
    "read_report",
    "structure_hash",
]
