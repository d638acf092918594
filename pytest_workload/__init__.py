"""pytest-workload: fingerprint ML workloads and gate CI on their regressions.

A workload is one module structure called with one input signature. Its hash comes from the
structure and the input shapes, dtypes and scalar values, never from weights.
"""

from __future__ import annotations

from .collapse import Collapse, CollapseIndex, KeyChecks, Sighting
from .data import (
    REPORT_SCHEMA_VERSION,
    AlternateHash,
    SessionReport,
    TestWorkloads,
    UserKey,
    Workload,
)
from .diff import Change, compare_documents, documents_match
from .distance import distance_factor, nearest
from .errors import CorruptFileError, UndescribableInputError, WorkloadDataError, WorkloadError
from .fingerprint import (
    BUILTIN_SCHEMES,
    CURRENT_SCHEME,
    FingerprintScheme,
    short_hash,
    workload_key,
)
from .recorder import WorkloadRecorder
from .signature import InputSignature, describe_args, describe_kwargs
from .storage import SnapshotDocument, SnapshotEntry, read_report
from .structure import ParamStats, param_stats, structure_hash

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
