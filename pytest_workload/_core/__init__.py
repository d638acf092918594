"""The foundation: errors, canonical and strict JSON, files and their format versions, notes,
and text for people."""
