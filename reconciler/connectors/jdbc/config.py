"""The `jdbc-sink` keys, as Confluent's `JdbcSinkConfig` names and defaults them, and the
settings a task runs with. Pure (no psycopg): `validate` reads this.

`connection.url` is `jdbc:postgresql://host[:port]/database[?params]` (Confluent's form) or a
libpq URI `postgresql://[user[:password]@]host[:port]/database`; `connection.user` and
`connection.password` win over the URL's. Keys Confluent has that change nothing here
(`max.retries`, `retry.backoff.ms`, `connection.attempts`, `connection.backoff.ms`,
`table.types`, `dialect.name`) are accepted so a manifest moves between runtimes unchanged.
"""

from __future__ import annotations

import zoneinfo
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import parse_qsl, unquote, urlsplit

from reconciler.connectors.configdef import ConfigDef, ConfigProblem, ConnectorConfig, ParsedConfig, Type, Value, topic_names
from reconciler.connectors.settings import ConnectorSettings, connector_name, derived, setting

INSERT_MODES: Final = ("insert", "upsert", "update")
PK_MODES: Final = ("none", "kafka", "record_key", "record_value")
KAFKA_PK_NAMES: Final = ("__connect_topic", "__connect_partition", "__connect_offset")
DIALECT: Final = "PostgreSqlDatabaseDialect"
DEFAULT_OFFSETS_TABLE: Final = "__connect_offsets"
DEFAULT_PORT: Final = 5432
# JDBC URL parameters that mean the same to libpq (pgjdbc's names → libpq's).
URL_PARAMS: Final = {"user": "user", "password": "password", "sslmode": "sslmode", "connectTimeout": "connect_timeout",
                     "connect_timeout": "connect_timeout", "ApplicationName": "application_name",
                     "application_name": "application_name", "currentSchema": "currentSchema"}


def _zone(value: Value) -> str | None:
    try:
        zoneinfo.ZoneInfo(str(value))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return f"{value!r} is not a time zone (an IANA name such as UTC or Europe/Paris)"
    return None


def _dialect(value: Value) -> str | None:
    return None if value in ("", DIALECT) else f"only {DIALECT} (PostgreSQL) is supported; got {value!r}"


def with_connection_keys(config_def: ConfigDef) -> ConfigDef:
    """`config_def` and the connection keys both connectors take, as Confluent's define them."""
    return (
        config_def
        .define("connection.url", Type.STRING, "jdbc:postgresql://host:port/database, or postgresql://…")
        .define("connection.user", Type.STRING, "The database user.", default=None)
        .define("connection.password", Type.PASSWORD, "The database user's password.", default=None)
        .define("connection.attempts", Type.INT, "Accepted for Confluent's configs; one attempt per batch.",
                default=3, minimum=1)
        .define("connection.backoff.ms", Type.LONG, "Accepted for Confluent's configs.", default=10000)
        .define("dialect.name", Type.STRING, "Empty or PostgreSqlDatabaseDialect.", default="", validator=_dialect)
    )


CONFIG_DEF: Final = (
    with_connection_keys(
        ConfigDef().define("topics", Type.LIST, "Topics to write to tables, comma-separated.", validator=topic_names))
    .define("insert.mode", Type.STRING, "insert, upsert or update.", default="insert", choices=INSERT_MODES,
            ignore_case=True)
    .define("batch.size", Type.INT, "Records per transaction (0: one per partition and batch).", default=3000,
            minimum=0)
    .define("delete.enabled", Type.BOOLEAN, "A null value deletes the row by key (pk.mode=record_key).",
            default=False)
    .define("table.types", Type.LIST, "Accepted for Confluent's configs (TABLE).", default=["TABLE"])
    .define("table.name.format", Type.STRING, "The table's name; ${topic} is the record's topic.",
            default="${topic}")
    .define("pk.mode", Type.STRING, "none, kafka, record_key or record_value.", default="none", choices=PK_MODES,
            ignore_case=True)
    .define("pk.fields", Type.LIST, "The primary key's fields (see pk.mode).", default=[])
    .define("fields.whitelist", Type.LIST, "The value's fields written (empty: all).", default=[])
    .define("db.timezone", Type.STRING, "The zone Timestamp and Time values are written in.", default="UTC",
            validator=_zone)
    .define("db.timezone.date", Type.STRING, "NONE: Date values are written in db.timezone, as Confluent's sink "
            "binds them (west of UTC, the day before); UTC: as they are.", default="NONE", choices=("NONE", "UTC"),
            ignore_case=True)
    .define("auto.create", Type.BOOLEAN, "CREATE the table from the records' schema when missing.", default=False)
    .define("auto.evolve", Type.BOOLEAN, "ALTER the table to add fields it lacks.", default=False)
    .define("quote.sql.identifiers", Type.STRING, "always (names as given) or never (lower-cased, as PostgreSQL "
            "folds unquoted names); identifiers are quoted either way.", default="always",
            choices=("always", "never"), ignore_case=True)
    .define("max.retries", Type.INT, "Accepted for Confluent's configs; a failed batch is retried by the next run.",
            default=10, minimum=0)
    .define("retry.backoff.ms", Type.INT, "Accepted for Confluent's configs.", default=3000, minimum=0)
    .define("offsets.table.name", Type.STRING, "The table in the target database holding each partition's "
            "next offset, written in the rows' transaction.", default=DEFAULT_OFFSETS_TABLE)
)


@dataclass(frozen=True)
class Target:
    """Where to connect. `describe()` names it in errors; the password is never part of it."""

    host: str
    port: int
    database: str
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    params: tuple[tuple[str, str], ...] = ()

    def describe(self) -> str:
        return f"{self.host}:{self.port}/{self.database}"

    def connect_args(self) -> dict[str, str | int]:
        """Keyword arguments for `psycopg.connect` (libpq's names)."""
        args: dict[str, str | int] = {"host": self.host, "port": self.port, "dbname": self.database}
        for name, value in self.params:
            if name == "currentSchema":
                args["options"] = f"-c search_path={value}"
            else:
                args[name] = value
        if self.user:
            args["user"] = self.user
        if self.password:
            args["password"] = self.password
        return args


def parse_url(url: str, user: str | None, password: str | None) -> tuple[Target | None, str | None]:
    """The target of a `connection.url`, or (None, why it is not one)."""
    text = url.strip()
    if text.startswith("jdbc:"):
        text = text[len("jdbc:"):]
    parts = urlsplit(text)
    if parts.scheme not in ("postgresql", "postgres"):
        return None, "must be jdbc:postgresql://host:port/database or postgresql://host:port/database"
    try:
        port = parts.port or DEFAULT_PORT
    except ValueError:
        return None, "has a port that is not a number"
    database = unquote(parts.path.lstrip("/"))
    if not parts.hostname or not database:
        return None, "must name a host and a database (jdbc:postgresql://host:port/database)"
    params: dict[str, str] = {}
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if name not in URL_PARAMS:
            return None, f"has the parameter {name!r}, which is not supported (supported: {', '.join(URL_PARAMS)})"
        params[URL_PARAMS[name]] = value
    user = user or params.pop("user", None) or (unquote(parts.username) if parts.username else None)
    password = password or params.pop("password", None) or (unquote(parts.password) if parts.password else None)
    params.pop("user", None)
    params.pop("password", None)
    return Target(parts.hostname, port, database, user, password, tuple(sorted(params.items()))), None


def connection_target(parsed: ParsedConfig, problems: list[ConfigProblem]) -> Target | None:
    """The database `connection.url` (with `connection.user`, `connection.password`) names, for
    both connectors; why not added to `problems` under `connection.url` when the URL is unusable."""
    target, why = parse_url(parsed.string("connection.url"), parsed.optional_string("connection.user"),
                            parsed.optional_string("connection.password"))
    if why and not any(p.key == "connection.url" for p in problems):
        problems.append(ConfigProblem("connection.url", why))
    return target


def target_setting(parsed: ParsedConfig, config: ConnectorConfig) -> Target:
    """A `derived` settings field: the connection's target (an empty one, and the problem, when the
    URL is unusable)."""
    return connection_target(parsed, parsed.problems) or Target("", DEFAULT_PORT, "")


@dataclass(frozen=True, kw_only=True)
class JdbcSinkSettings(ConnectorSettings):
    config_def = CONFIG_DEF

    name: str = derived(connector_name)
    topics: tuple[str, ...]
    target: Target = derived(target_setting)
    insert_mode: str = setting(convert=str.lower)
    batch_size: int
    delete_enabled: bool
    table_format: str = setting("table.name.format")
    pk_mode: str = setting(convert=str.lower)
    pk_fields: tuple[str, ...]
    whitelist: frozenset[str] = setting("fields.whitelist", convert=frozenset)
    timezone: str = setting("db.timezone")
    date_in_db_zone: bool = setting("db.timezone.date", convert=lambda value: value.upper() == "NONE")
    auto_create: bool
    auto_evolve: bool
    quote: bool = setting("quote.sql.identifiers", convert=lambda value: value.lower() == "always")
    offsets_table: str = setting("offsets.table.name")

    def config_problems(self, config: ConnectorConfig, found: list[ConfigProblem]) -> list[ConfigProblem]:
        """What Confluent's sink refuses when it starts, found before deploy."""
        problems = []
        if not self.topics and "topics" in config:
            problems.append(ConfigProblem("topics", "names no topic"))
        if self.delete_enabled and self.pk_mode != "record_key":
            problems.append(ConfigProblem("delete.enabled", "Primary key mode must be 'record_key' when delete "
                                          "support is enabled", "set pk.mode=record_key"))
        if self.insert_mode in ("upsert", "update") and self.pk_mode == "none":
            problems.append(ConfigProblem("pk.mode", f"insert.mode={self.insert_mode} needs a primary key",
                                          "set pk.mode to kafka, record_key or record_value"))
        if self.pk_mode == "kafka" and len(self.pk_fields) not in (0, 3):
            problems.append(ConfigProblem("pk.fields", "PK mode for table is kafka so there should either be no "
                                          "field names defined for defaults to be applicable, or exactly 3"))
        if not self.table_format.strip():
            problems.append(ConfigProblem("table.name.format", "must not be empty"))
        if (config.get("value.converter") or "").strip() != "org.apache.kafka.connect.json.JsonConverter":
            problems.append(ConfigProblem("value.converter", "jdbc-sink needs typed values",
                                          "set value.converter=org.apache.kafka.connect.json.JsonConverter"))
        elif _schemaless(config) and self.auto_create:
            problems.append(ConfigProblem("auto.create", "records without schemas (value.converter.schemas.enable="
                                          "false) cannot create a table", "create the table, set auto.create=false"))
        return problems

    def table_for(self, topic: str) -> str:
        return self.table_format.replace("${topic}", topic)


def _schemaless(config: ConnectorConfig) -> bool:
    return (config.get("value.converter.schemas.enable") or "true").strip().lower() == "false"
