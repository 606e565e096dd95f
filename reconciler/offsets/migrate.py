"""Migration from Kafka Connect: a Connect cluster's offsets become reviewed offsets requests.

`reconciler offsets import PATH… --from-connect-offsets-topic T` reads the old cluster's
offsets topic (and, for sinks, its consumer groups `connect-<name>` or the declared
`consumer.override.group.id`) and prints, for every connector declared in the manifests that
has offsets there, a `spec.offsets` block (`action: alter`, a new id) to paste into its
manifest. Nothing is written to Kafka: like every other offsets request it shows up in
`reconciler plan` (stop → snapshot → alter → return) and runs once on `apply`/`run` — the
Strimzi way (`KafkaConnector.spec.alterOffsets`), reviewed in git, not a hidden side channel.

Byte-exact keys (docs/record-formats.md#byte-exact-keys): each partition map is written in the key order
and number format Java used, and the import checks that the reconciler will re-encode it to
exactly the key bytes Java wrote (a difference is reported). When the old topic *is* the
cluster's offsets topic (a take-over), the executor finds and reuses Java's bytes directly.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reconciler.core.models import DesiredConnector, SourceRef
from reconciler.core.normalize import connector_properties
from reconciler.errors import ReconcilerError
from reconciler.kafka.formats import records as rec
from reconciler.kafka.io.admin import topic_partitions
from reconciler.kafka.io.config_providers import resolved_properties
from reconciler.kafka.io.offset_stores import sink_group
from reconciler.kafka.io.store import read_offsets_topics
from reconciler.kafka.replay import OffsetsReplay, partition_identity
from reconciler.kafka.settings import KafkaSettings
from reconciler.offsets.model import SinkOffsets, sink_body
from reconciler.offsets.sink import group_offsets


@dataclass(frozen=True, kw_only=True)
class ImportedRequest:
    """One connector's offsets from the old cluster, as an `alter` request body."""

    connector: str
    declared_at: SourceRef | None
    origin: str  # where the offsets were read, for the reviewer
    offsets: list[dict[str, Any]]  # `{partition, offset}` entries, Connect's PATCH body
    notes: list[str] = field(default_factory=list)


@dataclass
class ImportResult:
    requests: list[ImportedRequest] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # connectors skipped, and why


def source_imports(
    replays: Mapping[str, OffsetsReplay], desired: Sequence[DesiredConnector], result: ImportResult
) -> None:
    """Declared source connectors with offsets in the old topic(s) (the first topic wins)."""
    declared = {c.name: c for c in desired if not c.is_sink}
    found: set[str] = set()
    for replay in replays.values():
        found.update(replay.connectors())
    for name in sorted(found - set(declared)):
        if any(replay.offsets_for(name) for replay in replays.values()):
            result.notes.append(f"{name}: has source offsets in the old cluster but is not declared in the manifests; skipped")
    for name in sorted(found & set(declared)):
        entries, notes = _source_entries(name, replays)
        if entries:
            origin = "offsets topic " + ", ".join(replays)
            result.requests.append(
                ImportedRequest(
                    connector=name, declared_at=declared[name].source, origin=origin, offsets=entries, notes=notes
                )
            )


def _source_entries(name: str, replays: Mapping[str, OffsetsReplay]) -> tuple[list[dict[str, Any]], list[str]]:
    seen: set[Any] = set()
    entries: list[dict[str, Any]] = []
    notes: list[str] = []
    for replay in replays.values():
        for partition, offset, raw in replay.offsets_for(name):
            identity = partition_identity(partition)
            if identity in seen:
                continue
            seen.add(identity)
            entries.append({"partition": partition, "offset": offset})
            notes += _key_note(name, partition, raw)
    return entries, notes


def _key_note(name: str, partition: Mapping[str, Any], raw: bytes) -> list[str]:
    """Say when Java's own writer used other bytes than the ones its REST API (and the
    reconciler) serialise the partition to: e.g. a task's map in another field order."""
    try:
        minted = rec.encode_offset_key(name, partition)
    except ValueError as exc:
        return [f"partition {raw.decode('utf-8', 'replace')} cannot be re-encoded: {exc}"]
    if minted == raw:
        return []
    return [
        f"Java wrote the key {raw.decode('utf-8', 'replace')}; the reconciler writes "
        f"{minted.decode('utf-8', 'replace')}, the bytes Java's REST API reads this partition by "
        "(a Java task that reads its own field order would not find them)"
    ]


def sink_group_names(desired: Sequence[DesiredConnector]) -> dict[str, str]:
    """Declared sink connector → the consumer group holding its offsets."""
    return {c.name: sink_group(c.name, resolved_properties(connector_properties(c))) for c in desired if c.is_sink}


def sink_imports(
    groups: Mapping[str, str],
    offsets: Mapping[str, SinkOffsets],
    desired: Sequence[DesiredConnector],
    origin: str,
    result: ImportResult,
) -> None:
    """Declared sinks whose group has committed offsets in the old cluster."""
    declared = {c.name: c for c in desired}
    for name, group in sorted(groups.items()):
        committed = offsets.get(group, {})
        if committed:
            result.requests.append(
                ImportedRequest(
                    connector=name,
                    declared_at=declared[name].source,
                    origin=f"consumer group {group} at {origin}",
                    offsets=sink_body(committed),
                )
            )
        else:
            result.notes.append(
                f"{name}: consumer group {group} has no committed offsets at {origin}; nothing to import"
            )


# --- the snippet a user pastes -------------------------------------------------------------------


def render_snippets(result: ImportResult, request_id: str) -> str:
    """One commented `offsets:` block per connector, ready to paste under its `spec:`."""
    blocks = [_snippet(request, request_id) for request in sorted(result.requests, key=lambda r: r.connector)]
    return "\n".join(blocks)


def _snippet(request: ImportedRequest, request_id: str) -> str:
    where = f" ({request.declared_at})" if request.declared_at is not None else ""
    lines = [
        f"# --- connector {request.connector}{where}",
        f"# {len(request.offsets)} partition(s) from {request.origin}.",
        "# Paste under `spec:` (replacing any `offsets:` block); `reconciler plan` shows the steps.",
    ]
    lines += [f"# note: {note}" for note in request.notes]
    lines += ["offsets:", f"  id: {_yaml_scalar(request_id)}", "  action: alter", "  offsets:"]
    for entry in request.offsets:
        lines.append(f"    - partition: {flow_map(entry['partition'])}")
        lines.append(f"      offset: {flow_map(entry['offset'])}")
    return "\n".join(lines) + "\n"


def flow_map(mapping: Mapping[str, Any] | None) -> str:
    """A flat map as a YAML flow mapping that loads back to the same keys, order and types."""
    if mapping is None:
        return "null"
    return "{" + ", ".join(f"{_yaml_scalar(k)}: {_yaml_scalar(v)}" for k, v in mapping.items()) + "}"


def _yaml_scalar(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _yaml_float(value)
    text = str(value)
    # Double-quoted JSON string syntax is valid YAML and never re-typed (no `yes`, `1e3`, `~`…).
    return rec.dumps(text).decode("utf-8")


def _yaml_float(value: float) -> str:
    """YAML 1.1 reads a float only with a dot and a signed exponent: `1e+20` would be a string."""
    if not math.isfinite(value):
        raise ValueError(f"{value!r} is not a valid offset value")
    text = repr(value)
    mantissa, e, exponent = text.partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    if e and exponent[:1] not in "+-":
        exponent = "+" + exponent
    return mantissa + (("e" + exponent) if e else "")


def declared_names(desired: Iterable[DesiredConnector]) -> set[str]:
    return {c.name for c in desired}


# --- reading the old cluster ------------------------------------------------------------------------


def run_import(
    old: KafkaSettings,
    ours: KafkaSettings,
    desired: Sequence[DesiredConnector],
    topics: Sequence[str],
    *,
    only: Sequence[str] = (),
) -> ImportResult:
    """Read the old cluster's offsets topic(s) and sink groups for the declared connectors."""
    chosen = _chosen(desired, only)
    existing = topic_partitions(old)
    missing = [topic for topic in topics if topic not in existing]
    if missing:
        raise ReconcilerError(
            f"offsets topic(s) {', '.join(missing)} not found at {old.bootstrap_servers}",
            hint="name the Connect cluster's `offset.storage.topic` (e.g. connect-offsets) and its brokers "
            "with --from-bootstrap-servers",
        )
    result = ImportResult()
    source_imports(read_offsets_topics(old, topics), chosen, result)
    groups = sink_group_names(chosen)
    if groups and old.bootstrap_servers == ours.bootstrap_servers:
        result.notes += [
            f"{name}: consumer group {group} is on this same cluster: the reconciler uses it as it is; nothing to import"
            for name, group in sorted(groups.items())
        ]
    elif groups:
        committed = {group: group_offsets(old, group) for group in groups.values()}
        sink_imports(groups, committed, chosen, old.bootstrap_servers, result)
    return result


def _chosen(desired: Sequence[DesiredConnector], only: Sequence[str]) -> list[DesiredConnector]:
    if not only:
        return list(desired)
    unknown = sorted(set(only) - declared_names(desired))
    if unknown:
        raise ReconcilerError(
            f"Connector {unknown[0]} not found in the manifests"
            + (f" (nor {', '.join(unknown[1:])})" if len(unknown) > 1 else ""),
            hint="import offsets only for connectors the manifests declare",
        )
    return [c for c in desired if c.name in set(only)]
