"""Helpers for the iceberg-sink tests (no tests here): JSON records with and without
JsonConverter's envelope, the connector's config for a SQL catalog, and a table read back by
pyiceberg itself."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyiceberg.catalog import load_catalog
from pyiceberg.catalog.sql import SqlCatalog

from reconciler.connectors.converters.encode import envelope
from reconciler.connectors.converters.schema import Schema, struct
from reconciler.devtools.postgres import RunningPostgres

ICEBERG_SINK = "reconciler.connectors.iceberg.connector:IcebergSinkConnector"
JSON = "org.apache.kafka.connect.json.JsonConverter"
EVENT = struct(("id", Schema("int64")), ("kind", Schema("string", optional=True)),
               ("amount", Schema("double", optional=True)), name="event")


def event(i: int, kind: str | None = None, **extra: Any) -> bytes:
    """A schemaless JSON event (about 60 B)."""
    return json.dumps({"id": i, "kind": kind or ("click" if i % 3 else "view"), "amount": i / 4, **extra}).encode()


def typed_event(i: int) -> bytes:
    value = envelope(EVENT, {"id": i, "kind": "click" if i % 3 else "view", "amount": i / 4})
    assert value is not None
    return value


def sqlite_catalog(root: Path) -> dict[str, str]:
    return {"iceberg.catalog.type": "jdbc", "iceberg.catalog.uri": f"jdbc:sqlite:{root / 'catalog.db'}",
            "iceberg.catalog.warehouse": f"file://{root / 'warehouse'}"}


def postgres_catalog(postgres: RunningPostgres, database: str, root: Path) -> dict[str, str]:
    return {"iceberg.catalog.catalog-impl": "org.apache.iceberg.jdbc.JdbcCatalog",
            "iceberg.catalog.uri": f"jdbc:postgresql://{postgres.host}:{postgres.port}/{database}",
            "iceberg.catalog.jdbc.user": postgres.user, "iceberg.catalog.jdbc.password": postgres.password,
            "iceberg.catalog.warehouse": f"file://{root / 'warehouse'}"}


def sink_config(topic: str, catalog: dict[str, str], **extra: Any) -> dict[str, str]:
    """A manifest's config: schemaless JSON values into `db.events`, tables created and evolved."""
    config = {"topics": topic, "value.converter": JSON, "value.converter.schemas.enable": "false",
              "iceberg.tables": "db.events", "iceberg.tables.auto-create-enabled": "true",
              "iceberg.tables.evolve-schema-enabled": "true", **catalog}
    config.update({k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in extra.items()})
    return config


def read_table(catalog: dict[str, str], name: str = "db.events", **props: str) -> pa.Table:
    """The table as pyiceberg reads it, through the SQL catalog the sink wrote."""
    uri = catalog["iceberg.catalog.uri"]
    if uri.startswith("jdbc:sqlite:"):
        opened = SqlCatalog("iceberg", uri="sqlite:///" + uri[len("jdbc:sqlite:"):], **props)
    else:
        rest = uri[len("jdbc:postgresql://"):]
        user, password = catalog["iceberg.catalog.jdbc.user"], catalog["iceberg.catalog.jdbc.password"]
        opened = load_catalog("iceberg", type="sql", uri=f"postgresql+psycopg://{user}:{password}@{rest}", **props)
    try:
        return opened.load_table(name).scan().to_arrow()
    finally:
        opened.engine.dispose()  # its pooled connections, else each warns when collected


def id_counts(table: pa.Table) -> tuple[int, int, Counter[int]]:
    """(rows, distinct ids, ids seen more than once)."""
    ids = Counter(table.column("id").to_pylist())
    return table.num_rows, len(ids), Counter({i: n for i, n in ids.items() if n > 1})
