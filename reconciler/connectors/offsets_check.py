"""An alter request's offsets as the connector hooks see them, and the connector's verdict on them
before anything is written (docs/plugins.md#offsets-requests).

One home for both callers, so they hand the plugin the same maps: the manifest loader
(`reconciler validate`, `plan`, `apply`: each refusal at its entry's `file:line:col`) and the
offsets executor (`validate_offsets` once more, then `alter_offsets`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from reconciler.connectors.api import (
    Connector,
    OffsetsRefused,
    SinkConnector,
    SourceConnector,
    partition_key,
)
from reconciler.connectors.configdef import ConnectorConfig
from reconciler.core.models import OffsetEntry
from reconciler.core.offsets_rules import parse_sink_offset, parse_sink_partition


def hook_offsets(entries: Sequence[OffsetEntry], *, sink: bool) -> dict[Any, Any]:
    """An alter body Connect's own checks accepted (`core.offsets_rules`), as the hooks take it:
    `{(topic, partition): offset}` for a sink, `{partition key: offset map}` for a source.
    None removes a partition's offset; the last entry for a partition wins, as in Connect's map."""
    if sink:
        return {parse_sink_partition(e.partition): parse_sink_offset(e.offset) for e in entries}
    return {partition_key(e.partition): None if e.offset is None else dict(e.offset) for e in entries}


def validate_offsets(plugin: Connector, config: ConnectorConfig, offsets: Mapping[Any, Any]) -> None:
    """The plugin's `validate_offsets`, whichever kind it is; raises `OffsetsRefused` to refuse."""
    if isinstance(plugin, SinkConnector):
        plugin.validate_offsets(config, offsets)
    elif isinstance(plugin, SourceConnector):
        plugin.validate_offsets(config, offsets)


class Refusal(NamedTuple):
    """The connector's refusal of one entry (its index in the request's `offsets` list), or of
    the request as a whole (`entry` None: no entry alone is refused, only their combination)."""

    entry: int | None
    message: str


def refusals(plugin: Connector, config: ConnectorConfig, entries: Sequence[OffsetEntry]) -> list[Refusal]:
    """Every entry of an alter request the connector refuses; empty when it accepts the request.

    The hook is asked about the whole request, as the runtime will ask it; only when it refuses
    is it asked about each entry alone, to say which ones (every one, not just the first).
    Exceptions other than `OffsetsRefused` (a plugin bug, a config it cannot parse) propagate.
    """
    sink = isinstance(plugin, SinkConnector)
    whole = _refusal(plugin, config, hook_offsets(entries, sink=sink))
    if whole is None:
        return []
    each = [
        Refusal(index, message)
        for index, entry in enumerate(entries)
        if (message := _refusal(plugin, config, hook_offsets([entry], sink=sink))) is not None
    ]
    return each or [Refusal(None, whole)]


def _refusal(plugin: Connector, config: ConnectorConfig, offsets: Mapping[Any, Any]) -> str | None:
    try:
        validate_offsets(plugin, config, offsets)
    except OffsetsRefused as exc:
        return exc.message
    return None
