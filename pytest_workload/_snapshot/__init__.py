"""The snapshot: its file's text, the verdicts and texts over it, its files, and the gate that
stores it through syrupy. Other features import only what is named here."""

from .diff import compare_tables, explain, format_key, named

__all__ = ["compare_tables", "explain", "format_key", "named"]
