"""The per-test gates (snapshot, keys, performance) and the files they own."""
