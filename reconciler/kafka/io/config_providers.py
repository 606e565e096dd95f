"""Connect's three built-in config providers (KIP-297), read on this machine when asked.

`env` (Java's `EnvVarConfigProvider`: `${env:NAME}`, no path), `file` (`FileConfigProvider`:
`${file:/path/x.properties:key}`, a key of a properties file) and `directory`
(`DirectoryConfigProvider`: `${directory:/run/secrets:name}`, the whole content of the regular
file `name` in that directory, as Kubernetes mounts a Secret). `resolve` is what the runtime
calls when it starts a connector and its tasks, and `apply`'s offsets requests when they
open a connector's clients: each call reads anew, so a rotated file is read at the next batch.
The values are never cached, logged or written: the caller keeps them in memory. A failure
names no path either: a placeholder's text is masked like a secret (docs/secrets.md).

A Java Connect worker sharing the topics resolves the same placeholders with its own providers:
`config.providers=env,file,directory` and their classes (docs/secrets.md).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

from reconciler import masking
from reconciler.core.placeholders import Lookup, ProviderFailure, Resolution, transform
from reconciler.kafka.settings import parse_properties

NAMES = ("env", "file", "directory")
Read = Callable[[Path], str]


def _read_text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def lookup(environ: Mapping[str, str] | None = None, read: Read = _read_text) -> Lookup:
    """The providers as a `placeholders.Lookup`; `environ`: os.environ at each call by default."""

    def get(provider: str, path: str, keys: frozenset[str]) -> Mapping[str, str] | None:
        if provider == "env":
            return _env(os.environ if environ is None else environ, path, keys)
        if provider == "file":
            return _file(path, keys, read)
        if provider == "directory":
            return _directory(path, keys, read)
        return None

    return get


def resolve(config: Mapping[str, str | None], environ: Mapping[str, str] | None = None) -> Resolution:
    """`config` with its placeholders resolved by the three providers (see `placeholders.transform`)."""
    return transform(config, lookup(environ))


def _env(environ: Mapping[str, str], path: str, keys: frozenset[str]) -> dict[str, str]:
    if path:  # Java's EnvVarConfigProvider throws on a path too
        raise ProviderFailure("the env provider takes no path (write ${env:NAME})")
    return {key: environ[key] for key in keys if key in environ}


def _file(path: str, keys: frozenset[str], read: Read) -> dict[str, str]:
    if not path:
        return {}
    try:
        props = parse_properties(read(Path(path)))
    except OSError as exc:
        raise ProviderFailure(f"cannot read the file: {exc.strerror}") from None
    return {key: props[key] for key in keys if key in props}


def _directory(path: str, keys: frozenset[str], read: Read) -> dict[str, str]:
    directory = Path(path)
    if not path or not directory.is_dir():
        raise ProviderFailure("the path is not a directory")
    found: dict[str, str] = {}
    for key in keys:
        # Java lists the directory and matches file names: a key with a separator names no file.
        candidate = directory / key
        if "/" in key or key in (".", "..") or not candidate.is_file():
            continue
        try:
            found[key] = read(candidate)
        except OSError as exc:
            raise ProviderFailure(f"cannot read the file: {exc.strerror}") from None
    return found


def resolved_properties(config: Mapping[str, str | None]) -> dict[str, str | None]:
    """`config` resolved as far as the providers can, the values they gave remembered for the
    process's scrubber (`masking`): for the clients of a connector opened outside a batch (an
    offsets request's, a plan's look at a sink's offsets). What cannot be resolved stays a
    placeholder, and the client's own error names the setting."""
    resolution = resolve(config)
    masking.remember(resolution.secrets())
    return resolution.config
