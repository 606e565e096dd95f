"""Kafka, as Connect speaks it: the internal topics' record formats and state machines, and the
clients that read and write them.

Pure (bytes in, values out; no client): `records` (Connect's config, status and offsets
records) and `own_records` (our `<group>-reconciler` topic), on `jackson` and `javamap` (Java's
JSON and HashMap order); the replays (`replay`, `config_replay`, `status_replay`,
`offsets_replay`, `replay_base`) and `live_build`, which turn records into a `LiveState`;
`changes` (a plan as records); `partitioner`; client settings (`settings`, `client_config`,
`client_names`, `librdkafka_properties`, `overrides`).

I/O (confluent-kafka): `client` (clients and error translation), `consume` (reading to the
end), `reader` (the live state), `uncommitted`, `produce` (transactional writes, fencing),
`admin` (internal topics), `topic_creation` (KIP-158), `groups` (a sink's consumer group),
`offset_stores` (where a source's offsets live, read to the end).

May import `core`, `errors`, `heap` and `masking`; never a plugin, the planner, the runtime or
the CLI (docs/architecture.md).
"""
