"""`planted:AnyKeysSource`: `datagen` that takes any extra config key, as a connector handing
its config through to a client library would. The secrets property test plants credentials
under all sorts of keys (tests/integration/test_secrets.py); this connector lets them through
to the point where a real one would use them, and fails its start on a bad `record.bytes`
with datagen's own message, which quotes the value."""

from __future__ import annotations

from reconciler.connectors.datagen import DatagenConnector


class AnyKeysSource(DatagenConnector):
    """datagen with a config that may hold any other key."""
