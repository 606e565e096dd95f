"""Kafka, as Connect speaks it, in three parts that import downwards only (an import-linter
contract keeps it so):

- `io` — the clients (confluent-kafka): reading to the end, the one-pass store, transactional
  writes, admin, consumer groups, and how clients are configured.
- `replay` — the internal topics' state machines: records in, `LiveState` out. Pure.
- `formats` — the record codecs, Connect's and ours, byte for byte as Java writes them. Pure.

and `settings`, the values (`KafkaSettings`, `Topics`) every part names the cluster and its
topics with.

May import `core`, `errors`, `heap` and `masking`; never a plugin, the planner, the runtime or
the CLI (docs/architecture.md).
"""
