"""Every format version pytest-workload writes, in one table.

Each reader reads its current version only: earlier ones were written by development versions
before the first release. Numbers are never reused."""

from __future__ import annotations

from typing import Final

#: Version of the JSON report layout (``--workload-json``); bumped on incompatible changes.
#: 2 added ``measured`` to each workload; 3 the ``modules`` table (each distinct module
#: description once) and each test's ``libraries``; 4 one row per distinct workload under its
#: calling row, with every path that ran it in ``paths`` (compressed patterns).
REPORT_SCHEMA_VERSION: Final = 4

#: The fingerprint scheme this release computes (``_fingerprint.scheme.CURRENT_SCHEME``);
#: every scheme from 1 up to it is one a release computed.
FINGERPRINT_SCHEME: Final = 2

#: Layout version of a snapshot file (independent of the fingerprint scheme it records).
#: 2 added ``libraries`` and the ``modules`` table; 3 one entry per distinct workload, with
#: every path that ran it in ``paths``; 4 each workload's ``costs``.
SNAPSHOT_FORMAT: Final = 4

#: The layout of every snapshot of fingerprint scheme 1 (scheme 2 came before format 2): read
#: only to migrate such a snapshot (``--workload-migrate``). Every other earlier number was
#: written only by unreleased development versions and is refused; no number is reused.
SCHEME_1_SNAPSHOT_FORMAT: Final = 1

#: The field of a snapshot file that holds its layout version.
SNAPSHOT_FORMAT_KEY: Final = "pytest_workload_snapshot"

#: Layout version of a timing baseline file; 2 holds the ratio to the calibration kernel.
BASELINE_FORMAT: Final = 2
