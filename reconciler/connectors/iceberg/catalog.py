"""`iceberg.catalog.*` (Java's catalog properties) as pyiceberg's, and the catalog opened.

Java names a catalog by `type` (`rest`, `hive`, `jdbc`, `glue`, `hadoop`) or `catalog-impl`
(a class); pyiceberg by `type` (`rest`, `hive`, `sql`, `glue`). A JDBC catalog's
`uri` is a JDBC URL (`jdbc:sqlite:/path/catalog.db`, `jdbc:postgresql://host:port/db`, user and
password in `jdbc.user` / `jdbc.password` or the URL's parameters): pyiceberg's SqlCatalog takes
the SQLAlchemy URL of the same database, and both use the same two tables (`iceberg_tables`,
`iceberg_namespace_properties`), so either runtime reads the other's catalog. S3 settings keep
their names (`s3.endpoint`, `s3.access-key-id`, `s3.secret-access-key`, `s3.path-style-access`);
Java's `client.region` is pyiceberg's `s3.region`; with none, the AWS variables apply. ADLS and
GCS keys are translated by `storage`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final
from urllib.parse import parse_qsl, quote, urlsplit

from reconciler.connectors.api import ConnectorError
from reconciler.connectors.configdef import ConfigProblem
from reconciler.connectors.iceberg import storage

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog

OPEN_ATTEMPTS: Final = 3
# Java's catalog classes → pyiceberg's types.
_IMPLS: Final = {
    "org.apache.iceberg.jdbc.JdbcCatalog": "sql",
    "org.apache.iceberg.rest.RESTCatalog": "rest",
    "org.apache.iceberg.hive.HiveCatalog": "hive",
    "org.apache.iceberg.aws.glue.GlueCatalog": "glue",
}
_TYPES: Final = {"rest": "rest", "hive": "hive", "jdbc": "sql", "sql": "sql", "glue": "glue"}
# Java-only properties pyiceberg has no use for (it picks its FileIO by the warehouse's scheme).
_DROPPED: Final = ("catalog-impl", "io-impl", "jdbc.user", "jdbc.password", "jdbc.schema-version",
                   "jdbc.strict-mode", "s3.path-style-access")


def catalog_properties(java: Mapping[str, str]) -> tuple[dict[str, str], str | None]:
    """pyiceberg's properties for Java's `iceberg.catalog.*` (prefix removed), or (…, why not)."""
    impl = java.get("catalog-impl")
    kind = _IMPLS.get(impl) if impl else _TYPES.get((java.get("type") or "hive").lower())
    if kind is None:
        given = f"catalog-impl {impl}" if impl else f"type {java.get('type')}"
        return {}, (f"{given} is not supported here (pyiceberg): use type rest, jdbc, hive or glue, or "
                    f"catalog-impl {', '.join(_IMPLS)}")
    props, problem = storage.file_io_properties({key: value for key, value in java.items()
                                                 if key not in _DROPPED and key != "type"})
    if problem:
        return {}, problem
    props["type"] = kind
    if "client.region" in java and "s3.region" not in java:
        props["s3.region"] = java["client.region"]
    if kind == "sql":
        url, problem = sqlalchemy_url(java.get("uri", ""), java.get("jdbc.user"), java.get("jdbc.password"))
        if problem:
            return {}, problem
        props["uri"] = url
    return props, None


def sqlalchemy_url(jdbc: str, user: str | None, password: str | None) -> tuple[str, str | None]:
    """The SQLAlchemy URL of a JDBC catalog's database: SQLite or PostgreSQL (psycopg 3)."""
    text = jdbc.strip()
    if text.startswith("jdbc:sqlite:"):
        path = text[len("jdbc:sqlite:"):].split("?")[0]
        path = path[len("file:"):] if path.startswith("file:") else path
        if not path or path == ":memory:":
            return "", "iceberg.catalog.uri: jdbc:sqlite: needs a file (jdbc:sqlite:/path/catalog.db)"
        return f"sqlite:///{path}", None
    if text.startswith(("jdbc:postgresql:", "postgresql:", "postgresql+psycopg:")):
        parts = urlsplit(text.removeprefix("jdbc:"))
        params = dict(parse_qsl(parts.query))
        user = user or params.pop("user", None)
        password = password or params.pop("password", None)
        if not parts.hostname:
            return "", "iceberg.catalog.uri: must be jdbc:postgresql://host[:port]/database"
        auth = quote(user, safe="") + (f":{quote(password, safe='')}" if password else "") + "@" if user else ""
        port = f":{parts.port}" if parts.port else ""
        query = "&".join(f"{k}={quote(v, safe='')}" for k, v in params.items())
        return f"postgresql+psycopg://{auth}{parts.hostname}{port}{parts.path}" + (f"?{query}" if query else ""), None
    return "", ("iceberg.catalog.uri: a JDBC catalog here is jdbc:sqlite:/path or jdbc:postgresql://host:port/db; "
                f"got {urlsplit(text).scheme or text!r}")


def catalog_problems(java: Mapping[str, str]) -> list[ConfigProblem]:
    """The problems of `iceberg.catalog.*` that `validate` can see without reaching the catalog."""
    if not java:
        return []
    _, problem = catalog_properties(java)
    if problem is None:
        return []
    key, _, message = problem.partition(": ") if problem.startswith("iceberg.") else ("iceberg.catalog.type", "",
                                                                                        problem)
    return [ConfigProblem(key, message)]


def describe(java: Mapping[str, str]) -> str:
    """The catalog, named for an error line: its URI without credentials, or its type."""
    uri = java.get("uri")
    if not uri:
        return f"{java.get('type') or java.get('catalog-impl') or 'hive'} catalog"
    text = uri.removeprefix("jdbc:")
    parts = urlsplit(text)
    where = f"{parts.scheme}://{parts.hostname}{f':{parts.port}' if parts.port else ''}{parts.path}" \
        if parts.hostname else text.split("?")[0]
    return f"catalog at {'jdbc:' if uri.startswith('jdbc:') else ''}{where}"


def open_catalog(name: str, java: Mapping[str, str]) -> Catalog:
    """The catalog, or one ConnectorError line naming where it is (never a credential)."""
    from pyiceberg.catalog import load_catalog

    props, problem = catalog_properties(java)
    if problem:
        raise ConnectorError(problem)
    _make_sqlite_directory(props)
    for attempt in range(OPEN_ATTEMPTS):
        try:
            return load_catalog(name, **props)
        except Exception as exc:  # noqa: BLE001 - each catalog type raises its own kinds; one line either way
            # A SQL catalog's first opening creates its tables: tasks opening it at once race,
            # and the loser finds them there on its next attempt.
            if attempt == OPEN_ATTEMPTS - 1:
                raise ConnectorError(f"cannot open the {describe(java)}: {one_line(exc, java)}") from None
    raise AssertionError("unreachable")


def _make_sqlite_directory(props: Mapping[str, str]) -> None:
    """An SQLite catalog's directory, made if missing: SQLite creates the file but not its
    directory, and the warehouse beside it is created by its first write, so a fresh
    `jdbc:sqlite:lake/catalog.db` would otherwise fail only until another writer made `lake/`."""
    uri = props.get("uri", "")
    if uri.startswith("sqlite:///"):
        directory = os.path.dirname(uri[len("sqlite:///"):])
        if directory:
            os.makedirs(directory, exist_ok=True)


def close_catalog(catalog: Catalog) -> None:
    """Release what the catalog holds: a SQL catalog's SQLAlchemy engine keeps pooled database
    connections open until disposed (left to the garbage collector, each warns it was not closed)."""
    engine = getattr(catalog, "engine", None)
    if engine is not None:
        engine.dispose()


def one_line(exc: BaseException, java: Mapping[str, str]) -> str:
    """`exc` on one line, every credential of the catalog's properties hidden."""
    text = " ".join(part.strip() for part in str(exc).splitlines() if part.strip()) or type(exc).__name__
    for key, value in java.items():
        if key.startswith(storage.ENDPOINT_PREFIX):
            value = urlsplit(value).query  # an ADLS endpoint's query is a SAS token
        if value and any(word in key for word in ("password", "secret", "token", "credential", "account.key",
                                                  "account-key", "connection-string")):
            text = text.replace(value, "[hidden]")
    return text[:500]
