"""Kafka client settings: Java names → librdkafka names (the mapping table), gathering them from
a --kafka-config file, RECONCILER_KAFKA_* variables and -X, and the librdkafka name list."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from reconciler import masking
from reconciler.cli.main import main
from reconciler.core.redact import MASK
from reconciler.devtools import librdkafka_names
from reconciler.kafka.io import client_config
from reconciler.kafka.io.client_names import (
    JAVA_NAMES,
    InvalidClientSetting,
    client_name_problem,
    name_problem,
    parse_jaas,
    translate,
)
from reconciler.kafka.io.librdkafka_properties import LIBRDKAFKA_VERSION, PROPERTIES
from reconciler.kafka.io.overrides import PRODUCER, overrides

PLAIN = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="s3cret";'
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule required username=bob password=\"p\\\"w\\\\x\" ;"

# (Java setting, value) → the librdkafka settings it becomes.
TRANSLATED = [
    (("sasl.jaas.config", PLAIN), {"sasl.username": "alice", "sasl.password": "s3cret"}),
    (("sasl.jaas.config", SCRAM), {"sasl.username": "bob", "sasl.password": 'p"w\\x'}),
    (("max.request.size", "2097152"), {"message.max.bytes": "2097152"}),
    (("buffer.memory", "33554432"), {"queue.buffering.max.kbytes": "32768"}),
    (("buffer.memory", "100"), {"queue.buffering.max.kbytes": "1"}),
    (("send.buffer.bytes", "131072"), {"socket.send.buffer.bytes": "131072"}),
    (("receive.buffer.bytes", "65536"), {"socket.receive.buffer.bytes": "65536"}),
    (("fetch.max.wait.ms", "100"), {"fetch.wait.max.ms": "100"}),
    (("ssl.truststore.certificates", "-----BEGIN CERT"), {"ssl.ca.pem": "-----BEGIN CERT"}),
    (("ssl.keystore.certificate.chain", "-----BEGIN CERT"), {"ssl.certificate.pem": "-----BEGIN CERT"}),
    (("ssl.keystore.key", "-----BEGIN KEY"), {"ssl.key.pem": "-----BEGIN KEY"}),
    (("ssl.keystore.type", "pkcs12"), {}),
    # Names both clients share, with values librdkafka spells differently.
    (("ssl.endpoint.identification.algorithm", ""), {"ssl.endpoint.identification.algorithm": "none"}),
    (("ssl.endpoint.identification.algorithm", "HTTPS"), {"ssl.endpoint.identification.algorithm": "https"}),
    (("partition.assignment.strategy", "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"),
     {"partition.assignment.strategy": "cooperative-sticky"}),
    (("partition.assignment.strategy", "org.apache.kafka.clients.consumer.RangeAssignor,"
      "org.apache.kafka.clients.consumer.RoundRobinAssignor"), {"partition.assignment.strategy": "range,roundrobin"}),
    (("auto.offset.reset", "none"), {"auto.offset.reset": "error"}),  # raise when the log lacks the position
    (("auto.offset.reset", "latest"), {"auto.offset.reset": "latest"}),
    # Names both clients share, as they are.
    (("security.protocol", "SASL_SSL"), {"security.protocol": "SASL_SSL"}),
    (("sasl.mechanism", "SCRAM-SHA-512"), {"sasl.mechanism": "SCRAM-SHA-512"}),
    (("ssl.keystore.location", "/k.p12"), {"ssl.keystore.location": "/k.p12"}),
    (("linger.ms", "5"), {"linger.ms": "5"}),
    (("acks", "all"), {"acks": "all"}),
]


@pytest.mark.parametrize(("given", "expected"), TRANSLATED, ids=lambda v: v[0] if isinstance(v, tuple) else None)
def test_java_names_become_librdkafka_settings(given: tuple[str, str], expected: dict[str, str]) -> None:
    name, value = given
    assert translate({name: value}, "-X") == expected
    assert client_name_problem(name, value) is None


# Java settings without a librdkafka equivalent → an error naming what to use instead.
NO_EQUIVALENT = [
    ("ssl.truststore.location", "ssl.ca.location"),
    ("ssl.truststore.password", "ssl.ca.location"),
    ("ssl.truststore.type", "ssl.ca.location"),
    ("ssl.protocol", "OpenSSL negotiates"),
    ("ssl.enabled.protocols", "OpenSSL negotiates"),
    ("ssl.provider", "ssl.providers"),
    ("ssl.engine.factory.class", "ssl.engine.location"),
    ("max.block.ms", "message.timeout.ms"),
    ("default.api.timeout.ms", "--timeout"),
    ("partitioner.class", "partitioner"),
    ("metric.reporters", "statistics.interval.ms"),
    ("sasl.login.callback.handler.class", "sasl.oauthbearer.method=oidc"),
    ("socket.connection.setup.timeout.max.ms", "socket.connection.setup.timeout.ms"),
    ("key.serializer", "records are bytes"),
]


@pytest.mark.parametrize(("name", "instead"), NO_EQUIVALENT)
def test_java_names_without_an_equivalent_are_errors_naming_it(name: str, instead: str) -> None:
    problem = name_problem(name)
    assert problem is not None and problem.unknown_name
    assert problem.message == f"`{name}` is a Java client setting librdkafka has no equivalent for"
    assert problem.hint is not None and instead in problem.hint
    with pytest.raises(InvalidClientSetting, match=f"^-X: `{name}` is a Java client setting"):
        translate({name: "x"}, "-X")


def test_every_java_name_is_either_translated_or_explained() -> None:
    for name, java in JAVA_NAMES.items():
        assert name not in PROPERTIES, f"{name} is a librdkafka name too: the table would hide it"
        assert java.convert is not None or java.instead, name


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
         "OAuthBearerLoginModule is not supported (only PLAIN and SCRAM are translated); use sasl.oauthbearer.method=oidc"),
        ('com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true keyTab="/k";',
         "Krb5LoginModule is not supported (only PLAIN and SCRAM are translated); use sasl.kerberos.principal"),
        ('org.apache.kafka.common.security.plain.PlainLoginModule required username="a";', "PlainLoginModule entry has no password"),
        ("username=a password=b", "not a JAAS login module entry"),
        ('org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="b"', "not a JAAS"),
    ],
)
def test_jaas_configs_that_cannot_be_translated(value: str, message: str) -> None:
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        parse_jaas(value)
    problem = client_name_problem("sasl.jaas.config", value)
    assert problem is not None and not problem.unknown_name and "s3cret" not in problem.message


def test_a_name_neither_client_knows_gets_a_did_you_mean() -> None:
    problem = name_problem("linger.mss")
    assert problem is not None and problem.hint == "did you mean `linger.ms`?"
    assert problem.message == f"`linger.mss` is not a librdkafka {LIBRDKAFKA_VERSION} setting, nor a Java client setting that maps to one"


def test_translate_names_every_bad_setting_at_once() -> None:
    with pytest.raises(InvalidClientSetting) as caught:
        translate({"ssl.truststore.location": "/t.jks", "linger.ms": "5", "buffer.memory": "lots"}, "--kafka-config c.properties")
    assert caught.value.message.startswith("--kafka-config c.properties: `ssl.truststore.location` is a Java client")
    assert "`buffer.memory`: must be a number of bytes; got 'lots'" in caught.value.message


def test_connector_overrides_are_translated_too() -> None:
    config = {PRODUCER + "sasl.jaas.config": PLAIN, PRODUCER + "max.request.size": "10000", "topic": "t"}
    assert overrides(config, PRODUCER) == {"sasl.username": "alice", "sasl.password": "s3cret", "message.max.bytes": "10000"}
    with pytest.raises(InvalidClientSetting, match=r"^`producer.override.\*`: `ssl.truststore.location`"):
        overrides({PRODUCER + "ssl.truststore.location": "/t.jks"}, PRODUCER)


def test_the_librdkafka_name_list_is_the_installed_librarys() -> None:
    version, names = librdkafka_names.property_names()
    assert version == LIBRDKAFKA_VERSION and set(names) == PROPERTIES, (
        "confluent-kafka's librdkafka changed: run `python -m reconciler.devtools.librdkafka_names`"
    )
    assert librdkafka_names.main(["--check"]) == 0


# --- gathering: --kafka-config file, RECONCILER_KAFKA_*, -X ------------------------------------------


@pytest.mark.parametrize(
    ("variable", "setting"),
    [
        ("RECONCILER_KAFKA_SASL_MECHANISM", "sasl.mechanism"),
        ("RECONCILER_KAFKA_SSL_CA_LOCATION", "ssl.ca.location"),
        ("RECONCILER_KAFKA_SSL_CERTIFICATE__VERIFY__CB", "ssl.certificate_verify_cb"),
        ("RECONCILER_KAFKA_SOME___NAME", "some-name"),
    ],
)
def test_variable_names_map_to_settings_as_in_the_connect_images(variable: str, setting: str) -> None:
    assert client_config.setting_name(variable) == setting


def test_settings_from_the_environment() -> None:
    environ = {
        "RECONCILER_KAFKA_SASL_MECHANISM": "PLAIN",
        "RECONCILER_KAFKA_SASL_JAAS_CONFIG": PLAIN,
        "RECONCILER_KAFKA_CONFIG": "/etc/client.properties",  # --kafka-config's variable, not a setting
        "RECONCILER_GROUP_ID": "g",
        "KAFKA_SASL_MECHANISM": "other",
    }
    assert client_config.from_environment(environ) == {"sasl.jaas.config": PLAIN, "sasl.mechanism": "PLAIN"}
    assert client_config.gather(None, environ, []) == {"sasl.username": "alice", "sasl.password": "s3cret", "sasl.mechanism": "PLAIN"}


def test_a_bad_variable_is_named() -> None:
    with pytest.raises(InvalidClientSetting, match="^RECONCILER_KAFKA_SSL_TRUSTSTORE_LOCATION: `ssl.truststore.location`"):
        client_config.gather(None, {"RECONCILER_KAFKA_SSL_TRUSTSTORE_LOCATION": "/t.jks"}, [])


def test_kafka_config_file_expands_env_and_file_placeholders(tmp_path: Path) -> None:
    secrets = tmp_path / "secrets.properties"
    secrets.write_text("sasl.password=from-file\n")
    config = tmp_path / "client.properties"
    config.write_text(
        "security.protocol=SASL_SSL\n"
        "sasl.mechanism=${env:MECH}\n"
        "sasl.username=u-${env:WHO}\n"
        f"sasl.password=${{file:{secrets}:sasl.password}}\n"
        "max.request.size=1000\n"
    )
    environ = {"MECH": "SCRAM-SHA-256", "WHO": "me", "RECONCILER_KAFKA_LINGER_MS": "7"}
    assert client_config.gather(config, environ, ["acks=all", "linger.ms=9"]) == {
        "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "u-me",
        "sasl.password": "from-file", "message.max.bytes": "1000", "linger.ms": "9", "acks": "all",
    }
    assert client_config.gather(config, environ, [])["linger.ms"] == "7"  # the environment wins over the file


def test_placeholders_resolve_in_x_pairs_and_variables_too(tmp_path: Path) -> None:
    """`-X sasl.password=${directory:…}` keeps the secret out of `ps` and the pod spec."""
    (tmp_path / "mounted").mkdir()
    (tmp_path / "mounted" / "pw").write_text("from-dir")
    environ = {"RECONCILER_KAFKA_SASL_USERNAME": "${env:WHO}", "WHO": "me"}
    got = client_config.gather(None, environ, [f"sasl.password=${{directory:{tmp_path}/mounted:pw}}"])
    assert (got["sasl.username"], got["sasl.password"]) == ("me", "from-dir")
    with pytest.raises(InvalidClientSetting, match=r"^-X: `\$\{env:NOPE\}`: environment variable NOPE is not set$"):
        client_config.gather(None, {}, ["sasl.password=${env:NOPE}"])


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("sasl.password=${env:NOPE}", "`${env:NOPE}`: environment variable NOPE is not set"),
        ("sasl.password=${file:/no/such/file:k}", "`${file:/no/such/file:k}`: cannot read /no/such/file: No such file or directory"),
        ("sasl.password=${vault:secret/x:pw}", "`${vault:secret/x:pw}`: only ${env:NAME}, ${file:path:key} and ${directory:path:name} are resolved here"),
    ],
)
def test_placeholders_that_cannot_be_resolved(tmp_path: Path, line: str, message: str) -> None:
    config = tmp_path / "client.properties"
    config.write_text(line + "\n")
    with pytest.raises(InvalidClientSetting) as caught:
        client_config.gather(config, {}, [])
    assert caught.value.message == f"--kafka-config {config}: {message}"


def test_a_missing_file_key_and_a_bad_pair(tmp_path: Path) -> None:
    secrets = tmp_path / "s.properties"
    secrets.write_text("other=1\n")
    config = tmp_path / "client.properties"
    config.write_text(f"sasl.password=${{file:{secrets}:pw}}\n")
    with pytest.raises(InvalidClientSetting, match="has no key 'pw'"):
        client_config.gather(config, {}, [])
    with pytest.raises(InvalidClientSetting, match="^-X expects KEY=VALUE, got 'linger.ms'$"):
        client_config.gather(None, {}, ["linger.ms"])
    with pytest.raises(InvalidClientSetting, match="^cannot read --kafka-config"):
        client_config.gather(tmp_path / "missing.properties", {}, [])


@pytest.fixture
def fresh_process() -> Iterator[None]:
    masking.forget_all()
    yield
    masking.forget_all()


@pytest.mark.usefixtures("fresh_process")
def test_a_value_a_placeholder_gave_is_never_quoted_by_librdkafka(tmp_path: Path) -> None:
    """Whatever its key (docs/secrets.md): librdkafka's own words, which refuse the value before
    any client is built, quote it."""
    config = tmp_path / "client.properties"
    config.write_text("security.protocol=${env:KPW}\n")
    with pytest.raises(InvalidClientSetting) as caught:
        client_config.gather(config, {"KPW": "KafkaSecretVal77"}, [])
    assert 'Invalid value "KafkaSecretVal77"' in caught.value.message  # the error path that quotes it
    assert masking.scrub(caught.value.message) == (
        f'--kafka-config {config}: `security.protocol`: Invalid value "{MASK}" for configuration property "security.protocol"')


@pytest.mark.usefixtures("fresh_process")
def test_a_secret_is_remembered_before_a_translation_error_can_quote_it(tmp_path: Path) -> None:
    config = tmp_path / "client.properties"
    config.write_text("buffer.memory=${env:SIZE}\n")
    with pytest.raises(InvalidClientSetting) as caught:
        client_config.gather(config, {"SIZE": "SizeSecret88"}, [])
    assert "got 'SizeSecret88'" in caught.value.message
    assert "SizeSecret88" not in masking.scrub(caught.value.message)
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required password="JaasSecret99" ?;'
    with pytest.raises(InvalidClientSetting) as caught:
        client_config.gather(None, {}, [f"sasl.jaas.config={jaas}"])
    assert "JaasSecret99" in caught.value.message
    assert "JaasSecret99" not in masking.scrub(caught.value.message)


@pytest.mark.usefixtures("fresh_process")
def test_status_never_prints_a_value_the_kafka_config_file_took_from_the_environment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "client.properties"
    config.write_text("security.protocol=${env:KPW}\n")
    monkeypatch.setenv("KPW", "KafkaSecretVal77")
    argv = ["status", "--kafka-config", str(config), "--bootstrap-servers", "127.0.0.1:1", "--group-id", "g"]
    assert main(argv) != 0
    out, err = capsys.readouterr()
    assert f'Invalid value "{MASK}" for configuration property "security.protocol"' in err
    assert "KafkaSecretVal77" not in out + err


def test_javas_by_duration_offset_reset_is_refused_naming_what_librdkafka_has() -> None:
    problem = client_name_problem("auto.offset.reset", "by_duration:PT1H")
    assert problem is not None and not problem.unknown_name
    assert "earliest, latest or none" in problem.message
