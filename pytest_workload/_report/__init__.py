"""The session report: its file, the terminal summary, comparing and merging reports, and the
key collapses. No other feature imports from it."""
