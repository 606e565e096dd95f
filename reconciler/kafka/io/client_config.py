"""The Kafka client settings a user gives, gathered and translated for librdkafka.

Three sources, later ones winning: a `--kafka-config` properties file, `RECONCILER_KAFKA_*`
environment variables (the `KAFKA_`/`CONNECT_` style of the Connect images:
`RECONCILER_KAFKA_SASL_MECHANISM=PLAIN` is `sasl.mechanism=PLAIN`; `__` is `_` and `___` is
`-` in a name), then `-X key=value`. In each, `${env:NAME}`, `${file:path:key}` (a key of
another properties file) and `${directory:path:name}` are resolved by Connect's config
providers (`config_providers`), so a secret need not be written in them; the values they
give are secret whatever their key, and are remembered for the process's scrubber (`masking`)
with every credential the settings hold.
Java client names are translated (`client_names`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from reconciler import masking
from reconciler.core.pairs import key_values
from reconciler.core.placeholders import Variable, transform
from reconciler.core.redact import has_placeholder
from reconciler.kafka.io import config_providers
from reconciler.kafka.io.client_names import InvalidClientSetting, translate
from reconciler.kafka.settings import parse_properties

ENV_PREFIX = "RECONCILER_KAFKA_"
# Variables with that prefix that are options, not client settings (`--kafka-config`).
NOT_SETTINGS = frozenset({"RECONCILER_KAFKA_CONFIG"})
_UNDERSCORES = re.compile(r"_+")


def setting_name(variable: str) -> str:
    """`sasl.mechanism` for `RECONCILER_KAFKA_SASL_MECHANISM`."""
    name = variable[len(ENV_PREFIX) :].lower()
    return _UNDERSCORES.sub(lambda run: {1: ".", 2: "_", 3: "-"}.get(len(run.group(0)), run.group(0)), name)


def _variable(setting: str) -> str:
    """The variable `setting_name` reads `setting` from (for messages)."""
    return ENV_PREFIX + re.sub(r"[._-]", lambda m: {".": "_", "_": "__", "-": "___"}[m.group(0)], setting).upper()


def from_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The client settings `RECONCILER_KAFKA_*` variables give, with their names as written."""
    return {
        setting_name(variable): value
        for variable, value in sorted(environ.items())
        if variable.startswith(ENV_PREFIX) and variable not in NOT_SETTINGS and len(variable) > len(ENV_PREFIX)
    }


def expand(
    props: Mapping[str, str],
    environ: Mapping[str, str],
    origin: str,
    read: Callable[[Path], str] = lambda path: path.read_text(encoding="utf-8"),
) -> dict[str, str]:
    """`props` with `${env:NAME}`, `${file:path:key}` and `${directory:path:name}` replaced by
    the config providers (`config_providers`); InvalidClientSetting names every placeholder that
    cannot be (unset variable, unreadable file, missing key, another provider), never a value."""
    resolution = transform(props, config_providers.lookup(environ, read))
    if resolution.unresolved:
        raise InvalidClientSetting(f"{origin}: " + "; ".join(_problem(u.variable, u.reason) for u in resolution.unresolved))
    return {name: value or "" for name, value in resolution.config.items()}


def _problem(var: Variable, reason: str) -> str:
    if var.provider == "env" and not var.path and reason.endswith("not set"):
        reason = f"environment variable {var.key} is not set"
    elif reason.startswith("cannot read the file: "):  # the user's own settings: name the file
        reason = f"cannot read {var.path}{'' if var.provider == 'file' else '/' + var.key}: {reason.split(': ', 1)[1]}"
    elif reason == "the path is not a directory":
        reason = f"{var.path} is not a directory"
    elif var.provider == "file" and reason == "no such key":
        reason = f"{var.path} has no key {var.key!r}"
    elif var.provider == "directory" and reason.startswith("no such file"):
        reason = f"{var.path} has no file {var.key!r}"
    elif reason.startswith("no config provider"):
        reason = "only ${env:NAME}, ${file:path:key} and ${directory:path:name} are resolved here"
    return f"`{var}`: {reason}"


def gather(
    kafka_config: Path | None,
    environ: Mapping[str, str],
    pairs: Sequence[str],
    read: Callable[[Path], str] = lambda path: path.read_text(encoding="utf-8"),
) -> dict[str, str]:
    """Every client setting, in librdkafka's names: file, then environment, then `-X` pairs."""
    settings: dict[str, str] = {}
    if kafka_config is not None:
        origin = f"--kafka-config {kafka_config}"
        try:
            text = read(kafka_config)
        except OSError as exc:
            raise InvalidClientSetting(f"cannot read --kafka-config {kafka_config}: {exc.strerror}") from exc
        settings.update(_expanded(parse_properties(text), environ, origin, read))
    for name, value in from_environment(environ).items():
        settings.update(_expanded({name: value}, environ, _variable(name), read))
    settings.update(_expanded(_pairs(pairs), environ, "-X", read))
    return settings


def _expanded(props: Mapping[str, str], environ: Mapping[str, str], origin: str, read: Callable[[Path], str]) -> dict[str, str]:
    """Placeholders resolved (in all three sources: `-X sasl.password=${file:…}` keeps the secret
    out of `ps`), then translated with what they gave remembered as secret."""
    filled = frozenset(name for name, value in props.items() if has_placeholder(value))
    return translate_remembered(expand(props, environ, origin, read), origin, filled)


def translate_remembered(settings: Mapping[str, str], origin: str, filled: frozenset[str] = frozenset()) -> dict[str, str]:
    """`translate`d, their secret values remembered for the process's scrubber first, as the
    rule of docs/secrets.md says: a credential key's, and, whatever its key, one a placeholder
    (`filled`) gave. First, because a value is quoted both by `translate`'s errors and by
    librdkafka's (`Invalid value "…" for configuration property "security.protocol"`)."""
    masking.remember_config(settings, filled)
    translated = translate(settings, origin)
    masking.remember_config(translated)  # the sasl.password a sasl.jaas.config held
    return translated


def _pairs(items: Sequence[str]) -> dict[str, str]:
    pairs, bad = key_values(items)
    if bad is not None:
        raise InvalidClientSetting(f"-X expects KEY=VALUE, got {bad!r}")
    return pairs
