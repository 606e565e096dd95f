"""Record codecs: Connect's config, status and offsets records (`records`) and our own
`<group>-reconciler` topic's (`own_records`), bytes in and values out, on `jackson` and
`javamap` (Java's JSON and HashMap order, byte for byte); `changes` (a plan as the records
that apply it), `partitioner` (Java's default partitioner) and `dead_letter` (a dead letter
queue record with Connect's error headers). Pure: no client.

May import `core` and `kafka.settings`; never `kafka.replay` or `kafka.io`
(docs/record-formats.md is what they implement).
"""
