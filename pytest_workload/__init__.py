"""pytest-workload: fingerprint ML workloads and gate CI on their regressions.

A workload is one module structure called with one input signature. Its hash comes from the
structure and the input shapes, dtypes and scalar values, never from weights.

What is exported here is the public API; the ``_``-prefixed sub-packages are private layers
(data, identity, measuring, recording, verdicts, rendering, gates) that may change.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from ._identity.fingerprint import CURRENT_SCHEME, FingerprintScheme
from ._identity.structure import structure_hash
from ._model.errors import (
    CorruptFileError,
    DeviceUnavailableError,
    UndescribableInputError,
    WorkloadDataError,
    WorkloadError,
    WorkloadWarning,
)
from ._model.files import read_report
from ._model.paths import compress_paths, expand_paths
from ._model.report import SessionReport
from ._model.signature import InputSignature, workload_key
from ._model.snapshot import SnapshotDocument
from ._model.timing import Timing
from ._model.workload import ParamStats, TestWorkloads, Workload
from ._record.recorder import WorkloadRecorder
from ._verdict.distance import distance_factor, nearest

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
