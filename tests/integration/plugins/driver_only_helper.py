"""Imported by `needs_driver_only`; never shipped to executors (see that module)."""
