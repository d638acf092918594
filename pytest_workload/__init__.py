"""pytest-workload: fingerprint ML workloads and gate CI on their regressions.

A workload is one module structure called with one input signature. Its hash comes from the
structure and the input shapes, dtypes and scalar values, never from weights.
"""

from __future__ import annotations

from ._identity.describe import describe_args, describe_kwargs
from ._identity.fingerprint import BUILTIN_SCHEMES, CURRENT_SCHEME, FingerprintScheme, short_hash
from ._identity.structure import param_stats, structure_hash
from ._model.errors import (
    CorruptFileError,
    UndescribableInputError,
    WorkloadDataError,
    WorkloadError,
)
from ._model.files import read_report
from ._model.signature import InputSignature, workload_key
from ._model.snapshot import SnapshotDocument, SnapshotEntry
from ._model.versions import REPORT_SCHEMA_VERSION
from ._model.workload import (
    AlternateHash,
    ParamStats,
    SessionReport,
    TestWorkloads,
    UserKey,
    Workload,
)
from ._record.recorder import WorkloadRecorder
from ._verdict.collapse import Collapse, CollapseIndex, KeyChecks, Sighting
from ._verdict.diff import Change, compare_documents, documents_match
from ._verdict.distance import distance_factor, nearest

__all__ = [
    "BUILTIN_SCHEMES",
    "CURRENT_SCHEME",
    "REPORT_SCHEMA_VERSION",
    "AlternateHash",
    "Change",
    "Collapse",
    "CollapseIndex",
    "CorruptFileError",
    "FingerprintScheme",
    "InputSignature",
    "KeyChecks",
    "ParamStats",
    "SessionReport",
    "Sighting",
    "SnapshotDocument",
    "SnapshotEntry",
    "TestWorkloads",
    "UndescribableInputError",
    "UserKey",
    "Workload",
    "WorkloadDataError",
    "WorkloadError",
    "WorkloadRecorder",
    "compare_documents",
    "describe_args",
    "describe_kwargs",
    "distance_factor",
    "documents_match",
    "nearest",
    "param_stats",
    "read_report",
    "short_hash",
    "structure_hash",
    "workload_key",
]
