"""pytest-workload: fingerprint ML workloads and gate CI on their regressions.

A workload is one module structure called with one input signature. Its hash comes from the
structure and the input shapes, dtypes and scalar values, never from weights.

What is exported here is the public API; the ``_``-prefixed sub-packages are private packages
by feature (recording, report, snapshot, perf, tracing over fingerprint, record and core) that
may change.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from ._core.errors import (
    CorruptFileError,
    DeviceUnavailableError,
    UndescribableInputError,
    WorkloadDataError,
    WorkloadError,
    WorkloadWarning,
)
from ._fingerprint.distance import distance_factor, nearest
from ._fingerprint.scheme import CURRENT_SCHEME, FingerprintScheme
from ._fingerprint.structure import structure_hash
from ._recording.recorder import WorkloadRecorder
from ._report.report_files import read_report
from ._report.session_report import SessionReport
from ._snapshot.document import SnapshotDocument
from ._workload.paths import compress_paths, expand_paths
from ._workload.signature import InputSignature, workload_key
from ._workload.timing import Timing
from ._workload.workload import ParamStats, TestWorkloads, Workload

try:
    __version__ = version("pytest-workload")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = [
    "CURRENT_SCHEME",
    "CorruptFileError",
    "DeviceUnavailableError",
    "FingerprintScheme",
    "InputSignature",
    "ParamStats",
    "SessionReport",
    "SnapshotDocument",
    "TestWorkloads",
    "Timing",
    "UndescribableInputError",
    "Workload",
    "WorkloadDataError",
    "WorkloadError",
    "WorkloadRecorder",
    "WorkloadWarning",
    "compress_paths",
    "distance_factor",
    "expand_paths",
    "nearest",
    "read_report",
    "structure_hash",
    "workload_key",
]
