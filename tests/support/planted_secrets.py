"""Hypothesis strategies for the secrets property tests: connector configs with secrets planted
in every way the masking rule (docs/secrets.md) must catch, and the check that finds them.

A `Planted` connector holds its manifest's config (placeholders unresolved), the environment
they resolve from, `spec.sensitive`, every planted secret, and plain values that must stay
visible (so a test cannot pass by showing nothing at all).
"""

from __future__ import annotations

import string
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from reconciler.connectors.faulty import FaultySource

# Secrets start with `pw` and have 10+ random characters after it: a planted secret is never
# part of anything else the commands print.
SECRET = st.text(alphabet=string.ascii_letters + string.digits, min_size=10, max_size=14).map(lambda s: "pw" + s)


class AnyKeysSource(FaultySource):
    """`planted_secrets:AnyKeysSource`: `datagen` that fails on demand (`FaultySource`) and
    declares no config keys, so it takes any, as a connector handing its config through to a
    client library would: secrets are planted under all sorts of keys."""

    config_def = None


CLASS = f"{__name__}:AnyKeysSource"


@dataclass
class Planted:
    name: str
    config: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    sensitive: list[str] = field(default_factory=list)
    secrets: set[str] = field(default_factory=set)
    plain: dict[str, str] = field(default_factory=dict)

    def manifest(self, cls: str, *, state: str = "running", tasks_max: int = 1) -> dict[str, Any]:
        spec: dict[str, Any] = {"class": cls, "tasksMax": tasks_max, "state": state, "config": dict(self.config)}
        if self.sensitive:
            spec["sensitive"] = list(self.sensitive)
        return {"apiVersion": "reconciler.io/v1", "kind": "Connector", "metadata": {"name": self.name}, "spec": spec}


def _env_name() -> str:
    return f"RECONCILER_PLANTED_{uuid.uuid4().hex[:10].upper()}"


# Each site plants one secret: (planted, index, secret) -> None.
Site = Callable[[Planted, int, str], None]


def _literal_secret_key(suffix: str) -> Site:
    def plant(p: Planted, i: int, secret: str) -> None:
        p.config[f"site{i}.{suffix}"] = secret

    return plant


def _value_template(key: str, template: str) -> Site:
    def plant(p: Planted, i: int, secret: str) -> None:
        p.config[f"{key}{i}"] = template.format(secret=secret)

    return plant


def _from_env(template: str) -> Site:
    """A plain key whose value (all of it, or part) comes from `${env:…}`."""

    def plant(p: Planted, i: int, secret: str) -> None:
        var = _env_name()
        p.env[var] = secret
        p.config[f"endpoint{i}"] = template.replace("VAR", var)

    return plant


def _listed_sensitive(p: Planted, i: int, secret: str) -> None:
    p.config[f"opaque{i}"] = secret
    p.sensitive.append(f"opaque{i}")


SITES: list[Site] = [
    _literal_secret_key("password"),
    _literal_secret_key("db.secret"),
    _literal_secret_key("api.key"),
    _literal_secret_key("auth.token"),
    _literal_secret_key("gcs.credentials"),
    _literal_secret_key("basic.auth.user.info"),
    _value_template("c", 'org.apache.kafka.common.security.plain.PlainLoginModule required username="app" password="{secret}";'),
    _value_template("uri", "mongodb://app:{secret}@db1:27017/orders"),
    _value_template("jdbc", "jdbc:postgresql://db/orders?user=app&password={secret}&ssl=true"),
    _value_template("jdbc", "jdbc:sqlserver://db;user=app;password={secret};encrypt=true"),
    _value_template("jdbc", "jdbc:oracle:thin:scott/{secret}@db:1521/ORCL"),
    _value_template("url", "https://app:{secret}@registry.example.com/api"),
    _value_template("tls", "${{file:/etc/{secret}.properties:truststore.password}}"),
    _from_env("${env:VAR}"),
    _from_env("tenant-${env:VAR}"),
    _listed_sensitive,
]


@st.composite
def planted_connector(draw: st.DrawFn, name: str, pool: Iterator[str]) -> Planted:
    """A connector config with 1–5 planted secrets (each site kind at most once) and plain keys.
    Secrets are taken from `pool`, so that every secret of a scenario is distinct."""
    sites = draw(st.lists(st.sampled_from(range(len(SITES))), min_size=1, max_size=5, unique=True))
    planted = Planted(name)
    for index, site in enumerate(sites):
        secret = next(pool)
        SITES[site](planted, index, secret)
        planted.secrets.add(secret)
    for index in range(draw(st.integers(min_value=1, max_value=2))):
        planted.plain[f"plain{index}"] = f"visible-{draw(st.sampled_from(['orders', 'payments', 'users']))}-{index}"
    planted.config.update(planted.plain)
    return planted


def secret_pool(draw: st.DrawFn) -> Iterator[str]:
    """Enough distinct secrets for any scenario (3 connectors, 6 each, rotated once)."""
    return iter(draw(st.lists(SECRET, min_size=40, max_size=40, unique=True)))


def rotated(planted: Planted, new_secrets: Iterable[str]) -> Planted:
    """The same connector with every planted secret replaced by a new one (a rotation)."""
    mapping = dict(zip(sorted(planted.secrets), new_secrets, strict=True))

    def swap(text: str) -> str:
        for old, new in mapping.items():
            text = text.replace(old, new)
        return text

    return Planted(
        planted.name,
        {k: swap(v) for k, v in planted.config.items()},
        {k: swap(v) for k, v in planted.env.items()},
        list(planted.sensitive),
        set(mapping.values()),
        dict(planted.plain),
    )


def leaks(outputs: dict[str, str], secrets: Iterable[str]) -> list[str]:
    """`where: secret` for every planted secret found in any output (empty: none leaked)."""
    return [f"{where}: {secret}" for where, text in outputs.items() for secret in secrets if secret in text]
