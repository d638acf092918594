"""Every format version pytest-workload writes, in one table."""

from __future__ import annotations

from typing import Final

#: Version of the JSON report layout (``--workload-json``); bumped on incompatible changes.
#: 2 added ``measured`` to each workload; 3 the ``modules`` table (each distinct module
#: description once) and each test's ``libraries``.
REPORT_SCHEMA_VERSION: Final = 3

#: Report versions this release reads (a version 1 report has no ``measured`` fields, one
#: before 3 no module descriptions or library versions).
READABLE_REPORT_SCHEMA_VERSIONS: Final = (1, 2, 3)

#: Layout version of a snapshot file (independent of the fingerprint scheme it records).
#: 2 added ``libraries`` and the ``modules`` table.
SNAPSHOT_FORMAT: Final = 2

#: Snapshot layouts this release reads (format 1 has no libraries or module descriptions).
READABLE_SNAPSHOT_FORMATS: Final = (1, 2)

#: The field of a snapshot file that holds its layout version.
SNAPSHOT_FORMAT_KEY: Final = "pytest_workload_snapshot"

#: Layout version of a timing baseline file.
BASELINE_FORMAT: Final = 1
