"""The snapshot: its document format, the verdicts and texts over it, its files, and the
gate that stores it through syrupy. Other features import only what is named here."""

from .diff import Change, compare_documents, format_key
from .document import SnapshotDocument

__all__ = ["Change", "SnapshotDocument", "compare_documents", "format_key"]
