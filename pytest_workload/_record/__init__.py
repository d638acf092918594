"""Recording: which modules a test calls, with which inputs (hooks, call stack, rows)."""
