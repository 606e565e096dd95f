"""Developer tools: the loopback test broker and its capability probe (not used by the CLI)."""
