"""A connector's `key.converter` / `value.converter` and their settings, as a typed `Converter`.

Pure, and free of pyarrow: `validate`, `plan` and `apply` read these. Three of Connect's
converter classes are known, with the settings Java's classes define (the worker strips the
`value.converter.` prefix and passes the rest to the converter):

- `org.apache.kafka.connect.json.JsonConverter`: `schemas.enable` (default true),
  `decimal.format` (BASE64 or NUMERIC, any case), `replace.null.with.default` (default true),
  `schemas.cache.size` (read, and of no use here);
- `org.apache.kafka.connect.storage.StringConverter`: `converter.encoding` (a Java charset
  name; those below, whose Java and Python codecs agree);
- `org.apache.kafka.connect.converters.ByteArrayConverter`: none. It is also what an unset
  key means for a Python connector: the bytes as they are.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Final, Literal

from reconciler.connectors.api import valid_or_raise
from reconciler.connectors.configdef import ConfigDef, ConfigProblem, ConnectorConfig, Type

JSON: Final = "org.apache.kafka.connect.json.JsonConverter"
STRING: Final = "org.apache.kafka.connect.storage.StringConverter"
BYTES: Final = "org.apache.kafka.connect.converters.ByteArrayConverter"
KINDS: Final = {JSON: "json", STRING: "string", BYTES: "bytes"}
Role = Literal["key", "value"]
Kind = Literal["json", "string", "bytes"]
DecimalFormat = Literal["BASE64", "NUMERIC"]

# Java charset names (any case, with Java's aliases) → the Python codec that reads and writes the
# same bytes. `UTF-16` is special: Java writes a big-endian BOM and reads big-endian without one.
CHARSETS: Final = {
    "utf-8": "utf-8", "utf8": "utf-8", "unicode-1-1-utf-8": "utf-8",
    "iso-8859-1": "latin-1", "iso8859_1": "latin-1", "latin1": "latin-1", "iso-latin-1": "latin-1",
    "us-ascii": "ascii", "ascii": "ascii",
    "utf-16be": "utf-16-be", "utf_16be": "utf-16-be", "utf-16le": "utf-16-le", "utf_16le": "utf-16-le",
    "utf-16": "utf-16", "utf16": "utf-16", "utf_16": "utf-16",
}

JSON_DEF: Final = (
    ConfigDef()
    .define("schemas.enable", Type.BOOLEAN, "Include schemas within each of the serialized values and keys.",
            default=True)
    .define("schemas.cache.size", Type.INT, "The maximum number of schemas cached.", default=1000)
    .define("decimal.format", Type.STRING, "BASE64 (default) or NUMERIC: how decimals are written.",
            default="BASE64", choices=("BASE64", "NUMERIC"), ignore_case=True)
    .define("replace.null.with.default", Type.BOOLEAN, "Replace a null field that has a default by the default.",
            default=True)
)
STRING_DEF: Final = ConfigDef().define(
    "converter.encoding", Type.STRING, "The Java character set of the strings' bytes.", default="UTF-8")


@dataclass(frozen=True)
class Converter:
    """How a connector's keys or values turn into typed data and back (Connect's `Converter`)."""

    kind: Kind = "bytes"
    schemas_enable: bool = True
    decimal_format: DecimalFormat = "BASE64"
    replace_null_with_default: bool = True
    encoding: str = "utf-8"  # a Python codec name (`CHARSETS`)

    @property
    def class_name(self) -> str:
        return next(name for name, kind in KINDS.items() if kind == self.kind)


def read_converter(config: ConnectorConfig, role: Role) -> tuple[Converter, list[ConfigProblem]]:
    """The `<role>.converter` of `config` and the problems with it and its settings."""
    key = f"{role}.converter"
    name = (config.get(key) or "").strip()
    if not name:
        return Converter(), []
    kind = KINDS.get(name)
    if kind is None:
        known = ", ".join(KINDS)
        return Converter(), [ConfigProblem(key, f"`{name}` is not a converter the reconciler's runtime has",
                                           f"use one of {known}, or a Java connector class")]
    prefix = key + "."
    own = {k[len(prefix):]: v for k, v in config.items() if k.startswith(prefix)}
    if kind == "json":
        parsed = JSON_DEF.parse(own)
        converter = Converter("json", parsed.boolean("schemas.enable"),
                              "NUMERIC" if parsed.string("decimal.format").upper() == "NUMERIC" else "BASE64",
                              parsed.boolean("replace.null.with.default"))
    elif kind == "string":
        parsed = STRING_DEF.parse(own)
        charset = parsed.string("converter.encoding").strip()
        codec = CHARSETS.get(charset.lower())
        converter = Converter("string", encoding=codec or "utf-8")
        if codec is None:
            return converter, [ConfigProblem(prefix + "converter.encoding", f"`{charset}` is not a supported charset",
                                             "use UTF-8, UTF-16, UTF-16BE, UTF-16LE, ISO-8859-1 or US-ASCII")]
    else:
        return Converter("bytes"), []
    return converter, [replace(p, key=prefix + p.key) for p in parsed.problems]


def converter(config: ConnectorConfig, role: Role) -> Converter:
    """The `<role>.converter` of a config a task runs with; raises `InvalidConnectorConfig`."""
    return valid_or_raise(read_converter(config, role))
