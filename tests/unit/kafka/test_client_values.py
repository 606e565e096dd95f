"""Client setting values checked as librdkafka checks them, named as the user wrote them: one
check for `-X`, `--kafka-config` and a connector's `*.override.*` keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.connectors.checks import check_config
from reconciler.connectors.datagen import DatagenConnector
from reconciler.connectors.parquet_sink import ParquetSinkConnector
from reconciler.kafka.io import client_config
from reconciler.kafka.io.client_names import InvalidClientSetting, client_name_problem, translate
from reconciler.kafka.io.librdkafka_values import library, value_problem

LINGER_ABC = 'Invalid value for configuration property "linger.ms" (librdkafka: queue.buffering.max.ms); got \'abc\''


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        # librdkafka's alias: named as written, librdkafka's name in brackets.
        ("linger.ms", "abc", f"`linger.ms`: {LINGER_ABC}"),
        ("linger.ms", "-1", '`linger.ms`: Configuration property "linger.ms" value -1 is outside allowed range 0..900000'
         " (librdkafka: queue.buffering.max.ms)"),
        ("max.poll.records", "-5",
         '`max.poll.records`: Configuration property "max.poll.records" value -5 is outside allowed range 1..2147483647'),
        ("compression.type", "brotli",
         '`compression.type`: Invalid value "brotli" for configuration property "compression.type"'
         " (librdkafka: compression.codec)"),
        ("enable.idempotence", "yes", '`enable.idempotence`: Expected bool value for "enable.idempotence": true or false'),
        # A Java name translated to librdkafka's: named as written too.
        ("max.request.size", "10", '`max.request.size`: Configuration property "max.request.size" value 10 is outside'
         " allowed range 1000..1000000000 (librdkafka: message.max.bytes)"),
        ("fetch.max.wait.ms", "soon", '`fetch.max.wait.ms`: Invalid value for configuration property "fetch.max.wait.ms"'
         " (librdkafka: fetch.wait.max.ms); got 'soon'"),
    ],
)
def test_a_value_librdkafka_refuses_is_named_as_written(name: str, value: str, message: str) -> None:
    problem = client_name_problem(name, value)
    assert problem is not None and not problem.unknown_name
    assert problem.message == message


@pytest.mark.parametrize(
    ("name", "value"),
    [("linger.ms", "5"), ("linger.ms", "0.5"), ("acks", "all"), ("auto.offset.reset", "none"), ("max.request.size", "2000"),
     ("enable.idempotence", "TRUE"), ("sasl.password", "anything"), ("debug", "broker,topic")],
)
def test_values_librdkafka_takes_pass(name: str, value: str) -> None:
    assert client_name_problem(name, value) is None


def test_plugins_are_not_loaded_to_check_a_value(tmp_path: Path) -> None:
    # Setting plugin.library.paths loads (runs) them: only a client's construction may.
    assert value_problem("plugin.library.paths", str(tmp_path / "missing.so")) is None


def test_the_library_asked_is_the_one_confluent_kafka_runs() -> None:
    import ctypes

    import confluent_kafka

    version = library().rd_kafka_version_str
    version.restype = ctypes.c_char_p
    assert version().decode() == confluent_kafka.libversion()[0]


def test_x_and_kafka_config_name_the_setting_as_written(tmp_path: Path) -> None:
    with pytest.raises(InvalidClientSetting) as caught:
        translate({"linger.ms": "abc"}, "-X")
    assert caught.value.message == f"-X: `linger.ms`: {LINGER_ABC}"
    config = tmp_path / "client.properties"
    config.write_text("linger.ms=abc\n")
    with pytest.raises(InvalidClientSetting) as caught:
        client_config.gather(config, {}, [])
    assert caught.value.message == f"--kafka-config {config}: `linger.ms`: {LINGER_ABC}"


def test_connector_overrides_are_checked_with_the_same_rule() -> None:
    source = {"topic": "t", "count": "1", "producer.override.linger.ms": "abc", "admin.override.socket.timeout.ms": "5"}
    assert [(p.key, p.message, p.unknown) for p in check_config("datagen", DatagenConnector, source)] == [
        ("producer.override.linger.ms", f"`linger.ms`: {LINGER_ABC}", False),
        ("admin.override.socket.timeout.ms", '`socket.timeout.ms`: Configuration property "socket.timeout.ms" value 5'
         " is outside allowed range 10..300000", False),
    ]
    sink = {"topics": "t", "path": "/out", "consumer.override.max.poll.records": "-5"}
    assert [(p.key, p.message) for p in check_config("parquet-sink", ParquetSinkConnector, sink)] == [
        ("consumer.override.max.poll.records",
         '`max.poll.records`: Configuration property "max.poll.records" value -5 is outside allowed range 1..2147483647')]
