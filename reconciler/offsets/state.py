"""Reading what the offsets machinery needs: live state, our topic (progress, snapshots), and a
connector's current offsets as Connect's `GET /connectors/{name}/offsets` returns them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from reconciler.core.live import LiveState
from reconciler.connectors.registry import connector_kind
from reconciler.kafka import own_records as own
from reconciler.kafka.consume import batches_to_end
from reconciler.kafka.records import Invalid
from reconciler.kafka.overrides import ADMIN, client_settings
from reconciler.kafka.replay import ConfigReplay, ReconcilerReplay, StatusReplay, build_live_state
from reconciler.kafka.settings import KafkaSettings
from reconciler.kafka.offset_stores import sink_group
from reconciler.offsets.model import Progress, decode_progress, sink_body

_PROGRESS_PREFIX = own.OFFSETS_PROGRESS_PREFIX.encode()


@dataclass
class OffsetsState:
    """The config, status and reconciler topics read to the end."""

    live: LiveState
    ours: ReconcilerReplay
    progress: dict[str, Progress] = field(default_factory=dict)

    def snapshot(self, connector: str, request_id: str) -> list[dict[str, Any]] | None:
        taken = self.ours.snapshots.get((connector, request_id))
        return None if taken is None else taken.offsets


def read_offsets_state(
    settings: KafkaSettings, *, with_config: bool = True, with_reconciler: bool = True
) -> OffsetsState:
    """Live state plus our own topic's progress records (with the hook's answer) and snapshots.

    `with_reconciler=False`: our topic does not exist (a group only Connect has used): read as empty.
    """
    topics = settings.topics
    config, status, ours = ConfigReplay(), StatusReplay(), ReconcilerReplay()
    progress: dict[str, Progress] = {}
    names = [topics.configs, topics.status] if with_config else []
    if with_reconciler:
        names.append(topics.reconciler)
    for batch in batches_to_end(settings, names):
        for msg in batch:
            topic, key, value = msg.topic(), msg.key(), msg.value()
            if topic == topics.reconciler:
                ours.apply(key, value, msg.offset())
                if key is not None and key.startswith(_PROGRESS_PREFIX):
                    _progress(progress, key, value)
            elif topic == topics.configs:
                config.apply(key, value, msg.offset())
            else:
                status.apply(key, value, msg.offset(), msg.timestamp()[1])
    return OffsetsState(build_live_state(config, status, ours, settings.group_id), ours, progress)


def _progress(progress: dict[str, Progress], key: bytes, value: bytes | None) -> None:
    name = key[len(_PROGRESS_PREFIX) :].decode("utf-8", "replace")
    decoded = None if value is None else decode_progress(value)
    if decoded is None:
        progress.pop(name, None)
    elif not isinstance(decoded, Invalid):
        progress[name] = decoded


def current_body(settings: KafkaSettings, name: str, config: Mapping[str, str | None]) -> list[dict[str, Any]]:
    """The `offsets` array of `GET /connectors/{name}/offsets` for a connector with this config."""
    if connector_kind(config.get("connector.class") or "", config) == "sink":
        from reconciler.offsets.sink import group_offsets

        # Where Connect's admin client for the connector looks: `admin.override.*` applied.
        return sink_body(group_offsets(client_settings(settings, config, ADMIN), sink_group(name, config)))
    from reconciler.offsets.source import read_source_offsets

    return read_source_offsets(settings, name, config).body()
