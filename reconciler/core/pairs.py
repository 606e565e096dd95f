"""`KEY=VALUE` arguments (`-X`, `--spark-conf`): the key trimmed, the value as given."""

from __future__ import annotations

from collections.abc import Sequence


def key_values(items: Sequence[str]) -> tuple[dict[str, str], str | None]:
    """The pairs, later keys winning, and the first item that is not `KEY=VALUE` (None: all were)."""
    pairs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            return pairs, item
        pairs[key.strip()] = value
    return pairs, None
