"""Connector client overrides (KIP-458) → the settings a connector's clients use."""

from __future__ import annotations

from reconciler.kafka.io.overrides import ADMIN, CONSUMER, PRODUCER, client_settings, same_cluster
from reconciler.kafka.settings import KafkaSettings

WORKER = KafkaSettings(bootstrap_servers="a:9092", client_config={"security.protocol": "SASL_SSL"})


def test_no_overrides_keep_the_worker_settings() -> None:
    assert client_settings(WORKER, {"topics": "t", "consumer.override.group.id": "g"}, CONSUMER) is WORKER


def test_bootstrap_and_client_settings_of_the_matching_prefix_only() -> None:
    config = {
        "producer.override.bootstrap.servers": "b:9092",
        "producer.override.linger.ms": "5",
        "consumer.override.bootstrap.servers": "c:9092",
        "admin.override.sasl.username": "u",
        "producer.override.unset": None,
    }
    producer = client_settings(WORKER, config, PRODUCER)
    assert producer.bootstrap_servers == "b:9092"
    assert producer.client_config == {"security.protocol": "SASL_SSL", "linger.ms": "5"}
    assert producer.group_id == WORKER.group_id and producer.topics == WORKER.topics
    assert client_settings(WORKER, config, CONSUMER).bootstrap_servers == "c:9092"
    admin = client_settings(WORKER, config, ADMIN)
    assert (admin.bootstrap_servers, admin.client_config["sasl.username"]) == ("a:9092", "u")


def test_group_id_names_the_group_and_is_no_client_setting() -> None:
    settings = client_settings(WORKER, {"consumer.override.group.id": "mine", "consumer.override.fetch.min.bytes": "1"}, CONSUMER)
    assert "group.id" not in settings.client_config


def test_same_cluster_ignores_order_case_and_spaces() -> None:
    assert same_cluster(KafkaSettings(bootstrap_servers="a:1,b:2"), KafkaSettings(bootstrap_servers=" B:2 , a:1"))
    assert not same_cluster(KafkaSettings(bootstrap_servers="a:1"), KafkaSettings(bootstrap_servers="a:1,b:2"))
