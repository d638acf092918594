"""The snapshot: its file's text, the verdicts and texts over it, its files, and the gate that
stores it through syrupy. Other features import only what is named here."""

from .diff import Change, compare_tables, format_key

__all__ = ["Change", "compare_tables", "format_key"]
