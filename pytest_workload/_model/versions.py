"""Every format version pytest-workload writes, in one table."""

from __future__ import annotations

from typing import Final

#: Version of the JSON report layout (``--workload-json``); bumped on incompatible changes.
#: 2 added ``measured`` to each workload; 3 the ``modules`` table (each distinct module
#: description once) and each test's ``libraries``; 4 one row per distinct workload under its
#: calling row, with every path that ran it in ``paths`` (compressed patterns).
REPORT_SCHEMA_VERSION: Final = 4

#: Report versions this release reads (a version 1 report has no ``measured`` fields, one
#: before 3 no module descriptions or library versions, one before 4 a row per path).
READABLE_REPORT_SCHEMA_VERSIONS: Final = (1, 2, 3, 4)

#: The fingerprint scheme this release computes (``_identity.fingerprint.CURRENT_SCHEME``);
#: every scheme from 1 up to it is one a release computed.
FINGERPRINT_SCHEME: Final = 2

#: Layout version of a snapshot file (independent of the fingerprint scheme it records).
#: 2 added ``libraries`` and the ``modules`` table; 3 one entry per distinct workload, with
#: every path that ran it in ``paths``; 4 each workload's ``costs``.
SNAPSHOT_FORMAT: Final = 4

#: Snapshot layouts this release reads (format 1 has no libraries or module descriptions;
#: formats 1 and 2 keep an entry per path, folded into one per workload when read).
READABLE_SNAPSHOT_FORMATS: Final = (1, 2, 3, 4)

#: The field of a snapshot file that holds its layout version.
SNAPSHOT_FORMAT_KEY: Final = "pytest_workload_snapshot"

#: Layout version of a timing baseline file; 2 holds the ratio to the calibration kernel.
BASELINE_FORMAT: Final = 2
