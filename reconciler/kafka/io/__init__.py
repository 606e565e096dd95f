"""Kafka's clients (confluent-kafka): every read and write of the project goes through here.

`client` (clients and the translation of their errors), `consume` (reading topics to the end),
`store` (the one-pass read model: Connect's three topics and ours, read incrementally into one
`StoreView`), `uncommitted` (config records of open or aborted transactions), `produce`
(transactional writes, fencing), `admin` (the internal topics), `topic_creation` (KIP-158),
`groups` (a sink's consumer group), `offset_stores` (where a source's offsets live, read to the
end), `dead_letters` (a sink partition's dead letter queue records, exactly once); and how clients are configured: `client_config`, `client_names`, `librdkafka_properties`,
`overrides` (Connect's worker and connector properties as librdkafka's), `config_providers`
(KIP-297's env, file and directory providers, which resolve placeholders in them).

May import `core`, `errors`, `failpoints`, `heap`, `masking` and the rest of `kafka`.
"""
