"""Whether a TCP connection to a host and port opens: the fail-fast check before a client that
would retry an unreachable address for a long time (Spark's master or Connect server, an object
store's endpoint). A leaf every layer may use."""

from __future__ import annotations

import socket


def reachable(host: str, port: int, timeout_s: float) -> str | None:
    """None when a TCP connection to host:port opens within `timeout_s`, else why not."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return None
    except OSError as exc:
        return exc.strerror or str(exc) or type(exc).__name__
