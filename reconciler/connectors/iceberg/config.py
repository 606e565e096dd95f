"""The `iceberg-sink` keys, as Apache Iceberg's Kafka Connect sink (`IcebergSinkConfig`,
`TableSinkConfig`, Iceberg 1.10) names and defaults them, and the settings a task runs with.
Pure (no pyiceberg): `validate` reads this.

Keys of the Java sink that only steer its coordinator (the control topic and its consumer
group, the commit interval, timeout and threads, the coordinator's transactional id, Hadoop's
configuration) are accepted so a manifest moves between a Java worker and this runtime
unchanged, and change nothing here: the batch driver is the one committer, once per batch
(docs/connectors.md#iceberg-sink).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from reconciler.connectors.configdef import ConfigDef, ConfigProblem, ConnectorConfig, ParsedConfig, Type
from reconciler.connectors.settings import ConnectorSettings, Derive, connector_name, derived, setting

CATALOG_PREFIX: Final = "iceberg.catalog."
TABLE_PREFIX: Final = "iceberg.table."
AUTO_CREATE_PROPS: Final = "iceberg.tables.auto-create-props."
WRITE_PROPS: Final = "iceberg.tables.write-props."
DEFAULT_CATALOG: Final = "iceberg"
# Java's `COMMA_NO_PARENS_REGEX`: `bucket(id, 4)` stays one partition field.
_COMMA_NO_PARENS: Final = re.compile(r",(?![^()]*+\))")
_IGNORED = "Accepted for Apache Iceberg's sink; the batch driver commits once per batch, with no coordinator."

CONFIG_DEF: Final = (
    ConfigDef()
    .define("iceberg.tables", Type.LIST, "Destination tables, comma-separated (namespace.table).", default=None)
    .define("iceberg.tables.dynamic-enabled", Type.BOOLEAN,
            "Route each record to the table its iceberg.tables.route-field names.", default=False)
    .define("iceberg.tables.route-field", Type.STRING, "The value's field routing records to tables.", default=None)
    .define("iceberg.tables.default-commit-branch", Type.STRING, "The branch commits go to (main when unset).",
            default=None)
    .define("iceberg.tables.default-id-columns", Type.STRING, "Columns identifying a row, comma-separated.",
            default=None)
    .define("iceberg.tables.default-partition-by", Type.STRING,
            "Partition fields of created tables: column, year(c), month(c), day(c), hour(c), bucket(c, n), "
            "truncate(c, w).", default=None)
    .define("iceberg.tables.auto-create-enabled", Type.BOOLEAN, "Create missing tables from the records.",
            default=False)
    .define("iceberg.tables.evolve-schema-enabled", Type.BOOLEAN, "Add the records' new fields to the table.",
            default=False)
    .define("iceberg.tables.schema-force-optional", Type.BOOLEAN,
            "Create and add every column as optional (ours always are at the top level).", default=False)
    .define("iceberg.tables.schema-case-insensitive", Type.BOOLEAN,
            "Look table columns up ignoring case.", default=False)
    .define("iceberg.tables.upsert-mode-enabled", Type.BOOLEAN,
            "Each record replaces the table's row of its id columns (Tabular's sink's key).", default=False)
    .define("iceberg.tables.cdc-field", Type.STRING,
            "The value's field holding the operation: D deletes the row of its id columns, U replaces it, "
            "any other inserts (Tabular's sink's key).", default=None)
    .define("iceberg.catalog", Type.STRING, "The catalog's name.", default=DEFAULT_CATALOG)
    .define("iceberg.connect.group-id", Type.STRING,
            "The Connect consumer group the offsets are kept under (connect-<name> when unset).", default=None)
    .define("iceberg.control.topic", Type.STRING, _IGNORED, default="control-iceberg")
    .define("iceberg.control.group-id-prefix", Type.STRING, _IGNORED, default="cg-control-")
    .define("iceberg.control.commit.interval-ms", Type.INT, _IGNORED, default=300_000)
    .define("iceberg.control.commit.timeout-ms", Type.INT, _IGNORED, default=30_000)
    .define("iceberg.control.commit.threads", Type.INT, _IGNORED, default=2)
    .define("iceberg.control.commit.max-consecutive-failures", Type.INT, _IGNORED, default=1, minimum=1)
    .define("iceberg.coordinator.transactional.prefix", Type.STRING, _IGNORED, default=None)
    .define("iceberg.coordinator-executor-keep-alive-timeout-ms", Type.LONG, _IGNORED, default=120_000)
    .define("iceberg.hadoop-conf-dir", Type.STRING, "Accepted for Apache Iceberg's sink; no Hadoop here.",
            default=None)
    .define_prefix(CATALOG_PREFIX, "Catalog properties (type, uri, warehouse, jdbc.*, s3.*, adls.*, gcs.*, …), Java's names.")
    .define_prefix(TABLE_PREFIX, "Per-table settings: <table>.route-regex, .id-columns, .partition-by, "
                   ".commit-branch.")
    .define_prefix(AUTO_CREATE_PROPS, "Properties of tables the sink creates.")
    .define_prefix(WRITE_PROPS, "Writer properties (write.parquet.compression-codec, …).")
    .define_prefix("iceberg.hadoop.", "Accepted for Apache Iceberg's sink; no Hadoop here.")
    .define_prefix("iceberg.kafka.", _IGNORED)
)


def _or_none(value: str) -> str | None:
    return value or None


def _with_prefix(prefix: str) -> Derive:
    """The keys under `prefix`, without it (a `derived` field's reader)."""
    def derive(parsed: ParsedConfig, config: ConnectorConfig) -> dict[str, str]:
        return {key[len(prefix):]: value for key, value in config.items()
                if key.startswith(prefix) and value is not None}
    return derive


@dataclass(frozen=True, kw_only=True)
class TableConfig:
    """Java's `TableSinkConfig`: one table's settings (its own keys, else the defaults)."""

    route_regex: re.Pattern[str] | None = None
    id_columns: tuple[str, ...] = ()
    partition_by: tuple[str, ...] = ()
    commit_branch: str | None = None


@dataclass(frozen=True, kw_only=True)
class IcebergSinkSettings(ConnectorSettings):
    config_def = CONFIG_DEF

    name: str = derived(connector_name)
    tables: tuple[str, ...] = setting("iceberg.tables")
    dynamic: bool = setting("iceberg.tables.dynamic-enabled")
    route_field: str | None = setting("iceberg.tables.route-field", convert=_or_none)
    auto_create: bool = setting("iceberg.tables.auto-create-enabled")
    evolve_schema: bool = setting("iceberg.tables.evolve-schema-enabled")
    force_optional: bool = setting("iceberg.tables.schema-force-optional")
    case_insensitive: bool = setting("iceberg.tables.schema-case-insensitive")
    upsert: bool = setting("iceberg.tables.upsert-mode-enabled")
    cdc_field: str | None = setting("iceberg.tables.cdc-field", convert=_or_none)
    catalog_name: str = setting("iceberg.catalog", convert=lambda name: name or DEFAULT_CATALOG)
    catalog: dict[str, str] = derived(_with_prefix(CATALOG_PREFIX), secret=True)
    group_id: str | None = setting("iceberg.connect.group-id", convert=_or_none)
    default_branch: str | None = setting("iceberg.tables.default-commit-branch", convert=_or_none)
    default_id_columns: str | None = setting("iceberg.tables.default-id-columns", convert=_or_none)
    default_partition_by: str | None = setting("iceberg.tables.default-partition-by", convert=_or_none)
    auto_create_props: dict[str, str] = derived(_with_prefix(AUTO_CREATE_PROPS))
    write_props: dict[str, str] = derived(_with_prefix(WRITE_PROPS))
    table_keys: dict[str, str] = derived(_with_prefix(TABLE_PREFIX))

    def more_problems(self, found: list[ConfigProblem]) -> list[ConfigProblem]:
        """Java's `IcebergSinkConfig.validate`, and what this runtime cannot do: once every value
        parsed."""
        if found:
            return []
        problems = []
        if not self.catalog:
            problems.append(ConfigProblem("iceberg.catalog.*", "must be set: the catalog's properties "
                                          "(iceberg.catalog.type or .catalog-impl, .uri, .warehouse)"))
        if self.tables and self.dynamic:
            problems.append(ConfigProblem("iceberg.tables", "cannot be set with iceberg.tables.dynamic-enabled=true"))
        elif self.dynamic and not self.route_field:
            problems.append(ConfigProblem("iceberg.tables.route-field", "is required with dynamic tables"))
        elif not self.tables and not self.dynamic:
            problems.append(ConfigProblem("iceberg.tables", "must name the destination table(s)"))
        if self.catalog.get("warehouse", "").lower().startswith(("hdfs:", "viewfs:")):
            problems.append(ConfigProblem(f"{CATALOG_PREFIX}warehouse", "hdfs:// is not supported: pyiceberg reaches "
                                          "HDFS only through pyarrow's libhdfs and a Hadoop install; use a local "
                                          "path or s3://"))
        if self.case_insensitive:
            problems.append(ConfigProblem("iceberg.tables.schema-case-insensitive",
                                          "true is not supported: columns are matched by their exact names"))
        for table in self.tables:
            if "." not in table.strip("."):
                problems.append(ConfigProblem("iceberg.tables", f"{table!r} needs a namespace (namespace.table)"))
            config = self.table_config(table)
            if self.route_field and not self.dynamic and config.route_regex is None:
                problems.append(ConfigProblem(f"{TABLE_PREFIX}{table}.route-regex",
                                              "is required: iceberg.tables.route-field routes by each table's regex"))
        for key, value in self.table_keys.items():
            if key.endswith(".route-regex"):
                try:
                    re.compile(value)
                except re.error as exc:
                    problems.append(ConfigProblem(TABLE_PREFIX + key, f"is not a regular expression: {exc}"))
        problems += self._keyed_problems()
        return problems

    @property
    def keyed(self) -> bool:
        """Rows are replaced or deleted by their id columns (upsert mode or a CDC field), not appended."""
        return self.upsert or self.cdc_field is not None

    def _keyed_problems(self) -> list[ConfigProblem]:
        """Upsert mode and the CDC field need each table's id columns (Java fails its writer)."""
        if not self.keyed:
            return []
        why = "iceberg.tables.upsert-mode-enabled=true" if self.upsert else "iceberg.tables.cdc-field"
        if self.dynamic and not self.default_id_columns:
            return [ConfigProblem("iceberg.tables.default-id-columns", f"is required with {why} and dynamic tables: "
                                  "the columns that identify a row")]
        return [ConfigProblem(f"{TABLE_PREFIX}{table}.id-columns", f"is required with {why} (or "
                              "iceberg.tables.default-id-columns): the columns that identify a row")
                for table in self.tables if not self.table_config(table).id_columns]

    def table_config(self, table: str) -> TableConfig:
        """Java's `IcebergSinkConfig.tableConfig(name)`: `iceberg.table.<name>.*`, else the defaults."""
        own = {key[len(table) + 1:]: value for key, value in self.table_keys.items() if key.startswith(table + ".")}
        regex = own.get("route-regex")
        try:
            route = re.compile(regex) if regex is not None else None
        except re.error:
            route = None
        return TableConfig(
            route_regex=route,
            id_columns=split_list(own.get("id-columns", self.default_id_columns), re.compile(",")),
            partition_by=split_list(own.get("partition-by", self.default_partition_by), _COMMA_NO_PARENS),
            commit_branch=own.get("commit-branch", self.default_branch) or None,
        )

    def offsets_group(self, config: ConnectorConfig) -> str:
        """The group named in the snapshot summary's offsets key: Java's `connectGroupId()`, else
        the connector's Connect group (`kafka.io.offset_stores.sink_group`'s rule, not imported:
        `validate` would load the Kafka layer's state machines for one line)."""
        return self.group_id or config.get("consumer.override.group.id") or f"connect-{self.name}"


def split_list(value: str | None, separator: re.Pattern[str]) -> tuple[str, ...]:
    """Java's `stringToList`: split, trimmed, blanks dropped."""
    if not value:
        return ()
    return tuple(part.strip() for part in separator.split(value) if part.strip())
