"""The snapshot: its document format, the diff and upgrade verdicts over it, its files,
the syrupy extension that stores it, the gate and the change texts.

Other features import only what is named here.
"""

from .diff import Change, compare_documents, format_key
from .document import SnapshotDocument

__all__ = ["Change", "SnapshotDocument", "compare_documents", "format_key"]
