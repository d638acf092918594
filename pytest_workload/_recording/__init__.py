"""The recorder: its modules are mapped in ``recorder``'s docstring."""
