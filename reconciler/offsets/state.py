"""A connector's current offsets, as Connect's `GET /connectors/{name}/offsets` returns them.

The topics' records about offsets requests (progress, rollback snapshots, applied ids) are read
with everything else, by `reconciler.kafka.io.store`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reconciler.connectors.registry import connector_kind
from reconciler.core.kinds import Kind
from reconciler.kafka.io.config_providers import resolved_properties
from reconciler.kafka.io.offset_stores import sink_group
from reconciler.kafka.io.overrides import ADMIN, client_settings
from reconciler.kafka.settings import KafkaSettings
from reconciler.offsets.model import sink_body
from reconciler.offsets.sink import group_offsets
from reconciler.offsets.source import read_source_offsets


def current_body(settings: KafkaSettings, name: str, config: Mapping[str, str | None]) -> list[dict[str, Any]]:
    """The `offsets` array of `GET /connectors/{name}/offsets` for a connector with this config
    (its placeholders resolved: its clients' overrides may come from config providers)."""
    config = resolved_properties(config)
    if connector_kind(config.get("connector.class") or "", config) == Kind.SINK:
        # Where Connect's admin client for the connector looks: `admin.override.*` applied.
        return sink_body(group_offsets(client_settings(settings, config, ADMIN), sink_group(name, config)))

    return read_source_offsets(settings, name, config).body()
