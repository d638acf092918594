"""The session report: its document and file, the terminal summary, comparing and
merging reports (with the chart and texts), and the key collapses with their gate.

No other feature imports from it.
"""
