"""Every format version pytest-workload writes, in one table."""

from __future__ import annotations

from typing import Final

#: Version of the JSON report layout (``--workload-json``); bumped on incompatible changes.
#: 2 added ``measured`` to each workload.
REPORT_SCHEMA_VERSION: Final = 2

#: Report versions this release reads (a version 1 report has no ``measured`` fields).
READABLE_REPORT_SCHEMA_VERSIONS: Final = (1, 2)

#: Layout version of a snapshot file (independent of the fingerprint scheme it records).
SNAPSHOT_FORMAT: Final = 1

#: The field of a snapshot file that holds its layout version.
SNAPSHOT_FORMAT_KEY: Final = "pytest_workload_snapshot"

#: Layout version of a timing baseline file.
BASELINE_FORMAT: Final = 1
