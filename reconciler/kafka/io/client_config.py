"""The Kafka client settings a user gives, gathered and translated for librdkafka.

Three sources, later ones winning: a `--kafka-config` properties file, `RECONCILER_KAFKA_*`
environment variables (the `KAFKA_`/`CONNECT_` style of the Connect images:
`RECONCILER_KAFKA_SASL_MECHANISM=PLAIN` is `sasl.mechanism=PLAIN`; `__` is `_` and `___` is
`-` in a name), then `-X key=value`. In the file, `${env:NAME}` and `${file:path:key}` (a
key of another properties file, as Connect's FileConfigProvider reads it) are resolved, so
a secret need not be written in it; the values they give are secret whatever their key, and
are remembered for the process's scrubber (`masking`) with every credential the settings hold.
Java client names are translated (`client_names`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from reconciler import masking
from reconciler.kafka.io.client_names import InvalidClientSetting, translate
from reconciler.kafka.settings import parse_properties

ENV_PREFIX = "RECONCILER_KAFKA_"
# Variables with that prefix that are options, not client settings (`--kafka-config`).
NOT_SETTINGS = frozenset({"RECONCILER_KAFKA_CONFIG"})
# Connect's ConfigTransformer pattern: ${provider:[path:]key}.
_PLACEHOLDER = re.compile(r"\$\{([^}]*?):(?:([^}]*?):)?([^}]*?)\}")
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
    """`props` with `${env:NAME}` and `${file:path:key}` replaced; InvalidClientSetting names
    every placeholder that cannot be (unset variable, unreadable file, missing key, other provider)."""
    problems: list[str] = []
    files: dict[str, dict[str, str]] = {}

    def replace(match: re.Match[str]) -> str:
        provider, path, key = match.group(1), match.group(2), match.group(3)
        if provider == "env" and not path:
            if key in environ:
                return environ[key]
            problems.append(f"`{match.group(0)}`: environment variable {key} is not set")
        elif provider == "file" and path:
            value = _file_value(path, key, files, read)
            if isinstance(value, str):
                return value
            problems.append(f"`{match.group(0)}`: {value[0]}")
        else:
            problems.append(f"`{match.group(0)}`: only ${{env:NAME}} and ${{file:path:key}} are resolved here")
        return match.group(0)

    expanded = {name: _PLACEHOLDER.sub(replace, value) for name, value in props.items()}
    if problems:
        raise InvalidClientSetting(f"{origin}: " + "; ".join(problems))
    return expanded


def _file_value(path: str, key: str, files: dict[str, dict[str, str]], read: Callable[[Path], str]) -> str | tuple[str]:
    if path not in files:
        try:
            files[path] = parse_properties(read(Path(path)))
        except OSError as exc:
            return (f"cannot read {path}: {exc.strerror}",)
    if key not in files[path]:
        return (f"{path} has no key {key!r}",)
    return files[path][key]


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
        written = parse_properties(text)
        filled = frozenset(name for name, value in written.items() if _PLACEHOLDER.search(value))
        settings.update(translate_remembered(expand(written, environ, origin, read), origin, filled))
    for name, value in from_environment(environ).items():
        settings.update(translate_remembered({name: value}, _variable(name)))
    settings.update(translate_remembered(_pairs(pairs), "-X"))
    return settings


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
    pairs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InvalidClientSetting(f"-X expects KEY=VALUE, got {item!r}")
        pairs[key.strip()] = value
    return pairs
