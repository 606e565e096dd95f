"""Command-line interface: argument parsing and output only; the work happens elsewhere."""
