"""The `jdbc-source` keys, as Confluent's `JdbcSourceConnectorConfig` names and defaults them
(kafka-connect-jdbc 10.9), and the settings a task runs with. Pure (no psycopg): `validate`
reads this. The connection keys and URL forms are the sink's (`config.parse_url`).

Keys Confluent has that change nothing in a batch runtime (`poll.interval.ms`,
`table.poll.interval.ms`, `poll.linger.ms`, `max.buffer.size`, `query.retry.attempts`,
`connection.attempts`, `connection.backoff.ms`, `transaction.isolation.mode`,
`date.calendar.system`) are accepted so a manifest moves between runtimes unchanged; keys whose
other values would change the records (`timestamp.granularity`, the `*.mapping` keys) are
refused unless they ask for what this connector does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from reconciler.connectors.configdef import ConfigDef, ConfigProblem, ConnectorConfig, ParsedConfig, Type, Validator, Value
from reconciler.connectors.jdbc.config import Target, _zone, target_setting, with_connection_keys
from reconciler.connectors.settings import ConnectorSettings, connector_name, derived, setting

BULK: Final = "bulk"
INCREMENTING: Final = "incrementing"
TIMESTAMP: Final = "timestamp"
TIMESTAMP_INCREMENTING: Final = "timestamp+incrementing"
MODES: Final = (BULK, TIMESTAMP, INCREMENTING, TIMESTAMP_INCREMENTING)
NUMERIC_MAPPINGS: Final = ("none", "precision_only", "best_fit", "best_fit_eager_double")
# Task config keys, as Confluent's JdbcSourceTaskConfig names them.
TABLES: Final = "tables"
TABLES_FETCHED: Final = "tables.fetched"
LEGACY: Final = ("table.whitelist", "table.blacklist", "timestamp.column.name", "incrementing.column.name")
NEW: Final = ("table.include.list", "table.exclude.list", "timestamp.columns.mapping", "incrementing.column.mapping")


def _mode(value: Value) -> str | None:
    return None if value in MODES else f"must be one of {', '.join(MODES)}; got {value!r}"


def _only(supported: str) -> Validator:
    def check(value: Value) -> str | None:
        return None if value in ("", supported) else f"only {supported} is supported; got {value!r}"
    return check


def _initial(value: Value) -> str | None:
    # Confluent's -1 means "the database's time at the first query": a retried batch would start
    # at another time and skip what was inserted in between, so it cannot be exactly once here.
    if value is None or (isinstance(value, int) and value >= 0):
        return None
    return (f"must be epoch milliseconds >= 0; got {value!r} (-1, Confluent's \"now\", is not supported: "
            "a batch retried after a crash would start from a later time and skip rows)")


CONFIG_DEF: Final = (
    with_connection_keys(ConfigDef())
    .define("mode", Type.STRING, "bulk, incrementing, timestamp or timestamp+incrementing.", validator=_mode)
    .define("incrementing.column.name", Type.STRING, "The strictly increasing column (empty: the table's "
            "auto-incrementing column).", default="")
    .define("timestamp.column.name", Type.LIST, "Timestamp columns, the first non-null of them (COALESCE) "
            "being the row's time.", default=[])
    .define("timestamp.initial", Type.LONG, "Epoch ms to start from when no offset is stored.",
            default=None, validator=_initial)
    .define("timestamp.granularity", Type.STRING, "connect_logical only.", default="connect_logical",
            validator=_only("connect_logical"))
    .define("timestamp.delay.interval.ms", Type.LONG, "Rows younger than this are left for a later batch.",
            default=0, minimum=0)
    .define("table.whitelist", Type.LIST, "Tables to read (table, schema.table or \"schema\".\"table\").",
            default=[])
    .define("table.blacklist", Type.LIST, "Tables not to read.", default=[])
    .define("table.include.list", Type.LIST, "Regular expressions a table's schema.table must match.", default=[])
    .define("table.exclude.list", Type.LIST, "Regular expressions excluding tables the include list matched.",
            default=[])
    .define("timestamp.columns.mapping", Type.LIST, "Not supported: use timestamp.column.name.", default=[])
    .define("incrementing.column.mapping", Type.LIST, "Not supported: use incrementing.column.name.", default=[])
    .define("schema.pattern", Type.STRING, "Schemas tables are listed from (a LIKE pattern).", default=None)
    .define("catalog.pattern", Type.STRING, "Accepted for Confluent's configs (the connection's database).",
            default=None)
    .define("table.types", Type.LIST, "TABLE, VIEW, MATERIALIZED VIEW, PARTITIONED TABLE, FOREIGN TABLE.",
            default=["TABLE"])
    .define("query", Type.STRING, "A query read instead of tables (its WHERE clause is added, as Confluent's).",
            default="")
    .define("query.suffix", Type.STRING, "Text appended to every query.", default="")
    .define("topic.prefix", Type.STRING, "Topic = prefix + table name (the prefix alone for a query).", default="")
    .define("batch.max.rows", Type.INT, "Rows read per table per poll, at most.", default=1000, minimum=1)
    .define("poll.interval.ms", Type.INT, "Accepted for Confluent's configs; one read per batch.", default=5000)
    .define("table.poll.interval.ms", Type.LONG, "Accepted for Confluent's configs (tables listed per batch).",
            default=60000)
    .define("poll.linger.ms", Type.LONG, "Accepted for Confluent's configs.", default=5000)
    .define("max.buffer.size", Type.INT, "Accepted for Confluent's configs.", default=0)
    .define("query.retry.attempts", Type.INT, "Accepted for Confluent's configs.", default=-1)
    .define("numeric.precision.mapping", Type.BOOLEAN, "Deprecated: numeric.mapping=precision_only.",
            default=False)
    .define("numeric.mapping", Type.STRING, "none, precision_only, best_fit or best_fit_eager_double.",
            default=None, choices=NUMERIC_MAPPINGS, ignore_case=True)
    .define("validate.non.null", Type.BOOLEAN, "Refuse timestamp and incrementing columns that may be NULL.",
            default=True)
    .define("db.timezone", Type.STRING, "The zone TIMESTAMP (without time zone) values are read in.",
            default="UTC", validator=_zone)
    .define("quote.sql.identifiers", Type.STRING, "always or never; identifiers are quoted either way.",
            default="always", choices=("always", "never"), ignore_case=True)
    .define("transaction.isolation.mode", Type.STRING, "Accepted for Confluent's configs; each read is one "
            "REPEATABLE READ snapshot.", default="DEFAULT")
    .define("date.calendar.system", Type.STRING, "Accepted for Confluent's configs.", default="LEGACY",
            choices=("LEGACY", "PROLEPTIC_GREGORIAN"), ignore_case=True)
    .define(TABLES, Type.STRING, "Set by the connector in task configs: the task's tables.", default="")
    .define(TABLES_FETCHED, Type.BOOLEAN, "Set by the connector in task configs.", default=False)
)


def _numeric_mapping(parsed: ParsedConfig, config: ConnectorConfig) -> str:
    """`numeric.mapping`, or what the deprecated `numeric.precision.mapping` means."""
    mapping = (parsed.optional_string("numeric.mapping") or "").lower()
    if mapping:
        return mapping
    return "precision_only" if parsed.boolean("numeric.precision.mapping") else "none"


def _timestamp_initial(parsed: ParsedConfig, config: ConnectorConfig) -> int | None:
    return parsed.values["timestamp.initial"]  # type: ignore[return-value]  # a LONG: int or its default None


def _schema_pattern(parsed: ParsedConfig, config: ConnectorConfig) -> str | None:
    return parsed.optional_string("schema.pattern")


@dataclass(frozen=True, kw_only=True)
class JdbcSourceSettings(ConnectorSettings):
    config_def = CONFIG_DEF

    name: str = derived(connector_name)
    target: Target = derived(target_setting)
    mode: str
    incrementing_column: str = setting("incrementing.column.name")
    timestamp_columns: tuple[str, ...] = setting("timestamp.column.name",
                                                 convert=lambda columns: tuple(c for c in columns if c))
    timestamp_initial: int | None = derived(_timestamp_initial)
    delay_ms: int = setting("timestamp.delay.interval.ms")
    whitelist: tuple[str, ...] = setting("table.whitelist")
    blacklist: tuple[str, ...] = setting("table.blacklist")
    include: tuple[str, ...] = setting("table.include.list")
    exclude: tuple[str, ...] = setting("table.exclude.list")
    schema_pattern: str | None = derived(_schema_pattern)
    table_types: tuple[str, ...] = setting(convert=lambda types: tuple(t.upper() for t in types))
    query: str = setting(convert=str.strip)
    query_suffix: str
    topic_prefix: str
    batch_max_rows: int
    numeric_mapping: str = derived(_numeric_mapping)
    validate_non_null: bool
    timezone: str = setting("db.timezone")
    tables: str = setting(TABLES)  # a task's tables (the connector's task configs), Confluent's quoted list

    @property
    def uses_timestamp(self) -> bool:
        return self.mode in (TIMESTAMP, TIMESTAMP_INCREMENTING)

    @property
    def uses_incrementing(self) -> bool:
        return self.mode in (INCREMENTING, TIMESTAMP_INCREMENTING)

    def config_problems(self, config: ConnectorConfig, found: list[ConfigProblem]) -> list[ConfigProblem]:
        """What Confluent's `JdbcSourceConnectorValidation` refuses, in its words where it has them."""
        problems = [ConfigProblem(key, "is not supported by jdbc-source", f"use {old}")
                    for key, old in (("timestamp.columns.mapping", "timestamp.column.name"),
                                     ("incrementing.column.mapping", "incrementing.column.name")) if config.get(key)]
        if any(config.get(k) for k in LEGACY) and any(config.get(k) for k in NEW):
            problems.append(ConfigProblem("table.include.list", "Cannot mix legacy and new configuration approaches "
                                          "(table.whitelist, table.blacklist with table.include.list, "
                                          "table.exclude.list)"))
        if self.whitelist and self.blacklist:
            problems.append(ConfigProblem("table.blacklist", "table.whitelist and table.blacklist cannot both be set"))
        if self.exclude and not self.include:
            problems.append(ConfigProblem("table.exclude.list", "table.exclude.list cannot be used without "
                                          "table.include.list. Exclude list only applies to tables that match the "
                                          "include list."))
        if self.query and (self.whitelist or self.blacklist or self.include or self.exclude):
            problems.append(ConfigProblem("query", "Do not specify table filtering configs with 'query'"))
        if self.query and not self.topic_prefix:
            problems.append(ConfigProblem("topic.prefix", "names the topic in query mode and must not be empty"))
        if self.uses_timestamp and not self.timestamp_columns:
            problems.append(ConfigProblem("timestamp.column.name", f"mode={self.mode} needs a timestamp column"))
        if self.query and self.uses_incrementing and not self.incrementing_column:
            problems.append(ConfigProblem("incrementing.column.name", f"must be provided when using mode "
                                          f"'{self.mode}' with a custom query"))
        return problems
