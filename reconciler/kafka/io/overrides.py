"""A connector's own Kafka clients: Connect's per-connector client overrides (KIP-458).

A connector config may carry `producer.override.*`, `consumer.override.*` and `admin.override.*`
client settings (Connect with `connector.client.config.override.policy=All`). With
`bootstrap.servers` among them the connector works against another Kafka cluster than the
worker's: a source produces there, a sink consumes and commits there, and offsets management
(KIP-875) reads and changes them there. Java client names are translated to librdkafka's
(`client_names`). Plain data in, plain data out: no client is created here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from reconciler.kafka.io.client_names import translate
from reconciler.kafka.settings import KafkaSettings

PRODUCER = "producer.override."
CONSUMER = "consumer.override."
ADMIN = "admin.override."


def overrides(config: Mapping[str, str | None], prefix: str) -> dict[str, str]:
    """The `<prefix>*` settings of a connector config, prefix stripped, with librdkafka's names
    (InvalidClientSetting for a name librdkafka has no equivalent of)."""
    given = {key[len(prefix) :]: value for key, value in config.items() if key.startswith(prefix) and value is not None}
    return translate(given, f"`{prefix}*`") if given else given


def client_settings(settings: KafkaSettings, config: Mapping[str, str | None], prefix: str) -> KafkaSettings:
    """The worker's settings with the connector's `<prefix>*` overrides applied.

    `group.id` stays out: it names a sink's consumer group (`sink_group`), which the code that
    commits or reads it passes explicitly; every other setting reaches every client built from
    the result (SASL/SSL for the other cluster included).
    """
    extra = overrides(config, prefix)
    extra.pop("group.id", None)
    bootstrap = extra.pop("bootstrap.servers", settings.bootstrap_servers).strip()
    if not extra and bootstrap == settings.bootstrap_servers:
        return settings
    return dataclasses.replace(settings, bootstrap_servers=bootstrap, client_config={**settings.client_config, **extra})


def same_cluster(a: KafkaSettings, b: KafkaSettings) -> bool:
    """Whether two settings reach the same cluster, judged by their bootstrap addresses (order and
    spaces ignored). Connect compares cluster ids; this needs no round trip, and one cluster
    reached under two different addresses only costs a second, redundant offsets store."""
    return cluster_key(a) == cluster_key(b)


def cluster_key(settings: KafkaSettings) -> frozenset[str]:
    """The bootstrap addresses as a set: equal for two settings reaching the same cluster."""
    return frozenset(part.strip().lower() for part in settings.bootstrap_servers.split(",") if part.strip())
