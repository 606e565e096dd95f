"""datagen with Connect's converters: JsonConverter's envelope byte for byte as `encode` (and so
Java's JsonConverter) writes it, keys too; without schemas or with the default, the plain bytes;
a StringConverter charset that is not ASCII's re-encodes the same text."""

from __future__ import annotations

from reconciler.connectors.converters.arrow import decode
from reconciler.connectors.converters.encode import encode, envelope
from reconciler.connectors.converters.settings import JSON, STRING, Converter
from reconciler.connectors.datagen import ID, ROW, DatagenConnector, DatagenTask

BASE = {"topic": "t", "count": "40", "shards": "4", "record.bytes": "60"}


def batch(**config: str) -> tuple[list[bytes | None], list[bytes | None]]:
    task_config = DatagenConnector().task_configs({**BASE, **config}, 1)[0]
    made = DatagenTask(task_config).poll_batch({}, 40)
    return list(made.keys), list(made.values)


def test_json_with_schemas_writes_javas_envelope_for_keys_and_values() -> None:
    plain_keys, plain_values = batch()
    keys, values = batch(**{"value.converter": JSON, "key.converter": JSON})
    for plain_key, key, plain_value, value in zip(plain_keys, keys, plain_values, values, strict=True):
        assert plain_key is not None and plain_value is not None
        payload = decode([plain_value], Converter("json", schemas_enable=False)).table.to_pylist()[0]
        assert value == envelope(ROW, payload)
        assert key == envelope(ID, int(plain_key))
    decoded = decode(values, Converter("json"))
    assert decoded.failures == [] and sorted(decoded.table.column("id").to_pylist()) == list(range(40))


def test_json_without_schemas_and_the_default_are_the_plain_bytes() -> None:
    assert batch(**{"value.converter": JSON, "value.converter.schemas.enable": "false"}) == batch()
    assert batch(**{"value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter"}) == batch()


def test_a_string_converter_in_utf16_writes_the_same_text() -> None:
    plain_keys, plain_values = batch()
    keys, values = batch(**{"value.converter": STRING, "value.converter.converter.encoding": "UTF-16"})
    assert keys == plain_keys
    assert values == [encode(Converter("string", encoding="utf-16"), None, v.decode()) for v in plain_values if v]
