"""Kafka client settings written with Java's names, translated to librdkafka's.

Connect users write the Java client's property names (`ssl.truststore.location`,
`sasl.jaas.config`, `max.request.size`); the reconciler's clients are librdkafka's. Every
setting a user gives (`-X`, `--kafka-config`, `RECONCILER_KAFKA_*`, a connector's
`producer.override.*` / `consumer.override.*` / `admin.override.*`) goes through `translate`:

- a librdkafka name passes as it is (values of a few are converted from Java's spelling);
- a Java name with a librdkafka equivalent becomes it (`max.request.size` → `message.max.bytes`;
  `sasl.jaas.config` for PLAIN and SCRAM → `sasl.username` + `sasl.password`);
- a Java name without one, or a name neither client knows, is an error that names what to
  use in librdkafka instead;
- a value librdkafka would refuse (`linger.ms=abc`, `max.poll.records=-5`) is an error that
  names the setting as it was written (`librdkafka_values` asks librdkafka itself).

No client is created, so `reconciler validate` checks names and values offline, with the same
rules as every other path here: one check, whichever way a setting is given.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from reconciler.errors import ReconcilerError
from reconciler.kafka.io.librdkafka_properties import LIBRDKAFKA_VERSION, PROPERTIES
from reconciler.kafka.io.librdkafka_values import value_problem

OVERRIDE_PREFIXES = ("producer.override.", "consumer.override.", "admin.override.")

Convert = Callable[[str], dict[str, str]]


class InvalidClientSetting(ReconcilerError):
    """A client setting librdkafka cannot take (see `translate`)."""


class NameProblem(NamedTuple):
    message: str
    hint: str | None = None
    unknown_name: bool = True  # the name is the problem (else its value)


@dataclass(frozen=True)
class JavaName:
    """A Java client property: its librdkafka form (`convert`), or what to use instead (`instead`)."""

    convert: Convert | None = None
    instead: str = ""


def _renamed(target: str) -> Convert:
    return lambda value: {target: value}


def _bytes_to_kbytes(target: str) -> Convert:
    def convert(value: str) -> dict[str, str]:
        try:
            size = int(value.strip())
        except ValueError:
            raise ValueError(f"must be a number of bytes; got {value!r}") from None
        return {target: str(max(1, math.ceil(size / 1024)))}

    return convert


# --- sasl.jaas.config -----------------------------------------------------------------------

_JAAS = re.compile(
    r"\s*(?P<module>[\w.$]+)\s+(?P<flag>required|requisite|sufficient|optional)(?:\s+(?P<options>.*?))?\s*;\s*"
)
_JAAS_OPTION = re.compile(r"\s*(?P<key>[\w.-]+)\s*=\s*(?:\"(?P<quoted>(?:[^\"\\]|\\.)*)\"|(?P<bare>[^\s\";]+))")
_PASSWORD_MODULES = ("PlainLoginModule", "ScramLoginModule")
_OTHER_MODULES = {
    "OAuthBearerLoginModule": "sasl.oauthbearer.method=oidc with sasl.oauthbearer.client.id, "
    "sasl.oauthbearer.client.secret and sasl.oauthbearer.token.endpoint.url",
    "Krb5LoginModule": "sasl.kerberos.principal and sasl.kerberos.keytab",
}


def parse_jaas(value: str) -> dict[str, str]:
    """`sasl.username` and `sasl.password` from a PLAIN or SCRAM `sasl.jaas.config`."""
    match = _JAAS.fullmatch(value)
    if match is None:
        raise ValueError('not a JAAS login module entry: `<LoginModule class> required <key>="<value>" …;`')
    module = match["module"].rsplit(".", 1)[-1]
    if module not in _PASSWORD_MODULES:
        instead = _OTHER_MODULES.get(module, "the librdkafka sasl.* settings of your mechanism")
        raise ValueError(f"{module} is not supported (only PLAIN and SCRAM are translated); use {instead}")
    options = _jaas_options(match["options"] or "")
    missing = [key for key in ("username", "password") if key not in options]
    if missing:
        raise ValueError(f"{module} entry has no {' or '.join(missing)}")
    return {"sasl.username": options["username"], "sasl.password": options["password"]}


def _jaas_options(text: str) -> dict[str, str]:
    options: dict[str, str] = {}
    position = 0
    while position < len(text.rstrip()):
        match = _JAAS_OPTION.match(text, position)
        if match is None:
            raise ValueError(f"cannot read the options after {text[:position].strip()!r}")
        quoted = match["quoted"]
        options[match["key"]] = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else match["bare"]
        position = match.end()
    return options


# --- values librdkafka spells differently -----------------------------------------------------

_ASSIGNORS = {
    "org.apache.kafka.clients.consumer.RangeAssignor": "range",
    "org.apache.kafka.clients.consumer.RoundRobinAssignor": "roundrobin",
    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor": "cooperative-sticky",
}


def _assignors(value: str) -> dict[str, str]:
    names = [part.strip() for part in value.split(",") if part.strip()]
    if any(name.startswith("org.apache.kafka.") and name not in _ASSIGNORS for name in names):
        raise ValueError(f"librdkafka has the range, roundrobin and cooperative-sticky assignors; got {value!r}")
    return {"partition.assignment.strategy": ",".join(_ASSIGNORS.get(name, name) for name in names)}


def _endpoint_identification(value: str) -> dict[str, str]:
    # Java: "" turns hostname verification off and "https" (any case) turns it on.
    return {"ssl.endpoint.identification.algorithm": value.strip().lower() or "none"}


def _offset_reset(value: str) -> dict[str, str]:
    # Java's `none` (raise when the position is not in the log) is librdkafka's `error`.
    given = value.strip()
    if given.lower().startswith("by_duration:"):
        raise ValueError(f"librdkafka has no by_duration reset (Java's, KIP-1106); use earliest, latest or none; got {value!r}")
    return {"auto.offset.reset": "error" if given.lower() == "none" else given}


def _keystore_type(value: str) -> dict[str, str]:
    if value.strip().upper() == "PKCS12":
        return {}  # librdkafka's ssl.keystore.location is a PKCS#12 file: nothing to set
    raise ValueError(
        "librdkafka reads PKCS#12 keystores only (ssl.keystore.location); for PEM use "
        "ssl.certificate.location and ssl.key.location; convert a JKS keystore with "
        "`keytool -importkeystore -deststoretype PKCS12`"
    )


# Values converted for librdkafka names that Java shares but spells differently.
SAME_NAME_VALUES: dict[str, Convert] = {
    "partition.assignment.strategy": _assignors,
    "ssl.endpoint.identification.algorithm": _endpoint_identification,
    "auto.offset.reset": _offset_reset,
}

_JVM_ONLY = "a JVM-only setting; librdkafka has no equivalent"
_TRUSTSTORE = "ssl.ca.location (a PEM file of CA certificates; export a JKS truststore with `keytool -exportcert -rfc`)"

JAVA_NAMES: dict[str, JavaName] = {
    "sasl.jaas.config": JavaName(parse_jaas, "sasl.username and sasl.password"),
    "ssl.truststore.location": JavaName(instead=_TRUSTSTORE),
    "ssl.truststore.password": JavaName(instead=f"{_TRUSTSTORE}; a PEM file needs no password"),
    "ssl.truststore.type": JavaName(instead=_TRUSTSTORE),
    "ssl.truststore.certificates": JavaName(_renamed("ssl.ca.pem"), "ssl.ca.pem"),
    "ssl.keystore.certificate.chain": JavaName(_renamed("ssl.certificate.pem"), "ssl.certificate.pem"),
    "ssl.keystore.key": JavaName(_renamed("ssl.key.pem"), "ssl.key.pem"),
    "ssl.keystore.type": JavaName(_keystore_type, "ssl.keystore.location (PKCS#12)"),
    "ssl.protocol": JavaName(instead="nothing: OpenSSL negotiates the TLS version"),
    "ssl.enabled.protocols": JavaName(instead="nothing: OpenSSL negotiates the TLS version"),
    "ssl.keymanager.algorithm": JavaName(instead=_JVM_ONLY),
    "ssl.trustmanager.algorithm": JavaName(instead=_JVM_ONLY),
    "ssl.secure.random.implementation": JavaName(instead=_JVM_ONLY),
    "ssl.provider": JavaName(instead="ssl.providers (OpenSSL providers)"),
    "ssl.engine.factory.class": JavaName(instead="ssl.engine.location"),
    "security.providers": JavaName(instead=_JVM_ONLY),
    "sasl.client.callback.handler.class": JavaName(instead="sasl.oauthbearer.method=oidc (for OAUTHBEARER)"),
    "sasl.login.callback.handler.class": JavaName(instead="sasl.oauthbearer.method=oidc (for OAUTHBEARER)"),
    "sasl.login.class": JavaName(instead=_JVM_ONLY),
    "max.request.size": JavaName(_renamed("message.max.bytes"), "message.max.bytes"),
    "buffer.memory": JavaName(_bytes_to_kbytes("queue.buffering.max.kbytes"), "queue.buffering.max.kbytes"),
    "send.buffer.bytes": JavaName(_renamed("socket.send.buffer.bytes"), "socket.send.buffer.bytes"),
    "receive.buffer.bytes": JavaName(_renamed("socket.receive.buffer.bytes"), "socket.receive.buffer.bytes"),
    "fetch.max.wait.ms": JavaName(_renamed("fetch.wait.max.ms"), "fetch.wait.max.ms"),
    "max.block.ms": JavaName(instead="message.timeout.ms (librdkafka never blocks a produce call)"),
    "default.api.timeout.ms": JavaName(instead="the reconciler's --timeout"),
    "partitioner.class": JavaName(instead="partitioner (murmur2_random is Java's default)"),
    "key.serializer": JavaName(instead="nothing: records are bytes here"),
    "value.serializer": JavaName(instead="nothing: records are bytes here"),
    "key.deserializer": JavaName(instead="nothing: records are bytes here"),
    "value.deserializer": JavaName(instead="nothing: records are bytes here"),
    "interceptor.classes": JavaName(instead=_JVM_ONLY),
    "metric.reporters": JavaName(instead="statistics.interval.ms (librdkafka's statistics)"),
    "metrics.num.samples": JavaName(instead="statistics.interval.ms (librdkafka's statistics)"),
    "metrics.sample.window.ms": JavaName(instead="statistics.interval.ms (librdkafka's statistics)"),
    "metrics.recording.level": JavaName(instead="statistics.interval.ms (librdkafka's statistics)"),
    "exclude.internal.topics": JavaName(instead="nothing: the reconciler subscribes to named topics only"),
    "socket.connection.setup.timeout.max.ms": JavaName(instead="socket.connection.setup.timeout.ms"),
    "metadata.max.idle.ms": JavaName(instead="topic.metadata.refresh.interval.ms"),
}


def name_problem(name: str) -> NameProblem | None:
    """Why `name` cannot be a librdkafka setting, or None when it can (directly or translated)."""
    if name in PROPERTIES:
        return None
    java = JAVA_NAMES.get(name)
    if java is not None:
        if java.convert is not None:
            return None
        return NameProblem(f"`{name}` is a Java client setting librdkafka has no equivalent for", f"use {java.instead}")
    close = difflib.get_close_matches(name, sorted(PROPERTIES | JAVA_NAMES.keys()), n=1, cutoff=0.75)
    hint = f"did you mean `{close[0]}`?" if close else "see librdkafka's CONFIGURATION.md for its settings"
    return NameProblem(
        f"`{name}` is not a librdkafka {LIBRDKAFKA_VERSION} setting, nor a Java client setting that maps to one", hint
    )


def client_name_problem(name: str, value: str | None) -> NameProblem | None:
    """As `name_problem`, and whether `value` translates (e.g. a `sasl.jaas.config` it can read)
    to values librdkafka takes."""
    problem = name_problem(name)
    if problem is not None or value is None:
        return problem
    try:
        translated = _translate_one(name, value)
    except ValueError as exc:
        return NameProblem(f"`{name}`: {exc}", unknown_name=False)
    for target, librdkafka_value in translated.items():
        refused = value_problem(target, librdkafka_value, written=name)
        if refused is not None:
            return NameProblem(f"`{name}`: {refused}", unknown_name=False)
    return None


def translate(settings: Mapping[str, str], origin: str) -> dict[str, str]:
    """`settings` with librdkafka's names; InvalidClientSetting names every bad one and `origin`
    (where they came from: "-X", "--kafka-config client.properties", "producer.override.")."""
    translated: dict[str, str] = {}
    problems: list[str] = []
    for name, value in settings.items():
        problem = client_name_problem(name, value)
        if problem is not None:
            problems.append(problem.message + (f" ({problem.hint})" if problem.hint else ""))
            continue
        translated.update(_translate_one(name, value))
    if problems:
        raise InvalidClientSetting(f"{origin}: " + "; ".join(problems))
    return translated


def _translate_one(name: str, value: str) -> dict[str, str]:
    java = JAVA_NAMES.get(name)
    if java is not None and java.convert is not None and name not in PROPERTIES:
        return java.convert(value)
    convert = SAME_NAME_VALUES.get(name)
    return convert(value) if convert is not None else {name: value}
