"""The recorder: hooks on every module call, the call stack, the identity cache, a row's
states, and the conversion of rows into a test's workloads.

No other feature imports from it.
"""
