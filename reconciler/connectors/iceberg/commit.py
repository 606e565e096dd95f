"""The driver's side of `iceberg-sink`: the offsets the tables hold before a batch, one snapshot
per table after it, and a KIP-875 request's offsets written into the tables.

A commit is Java's `Coordinator.commitToTable` without the control topic: the tasks' data files
appended in one snapshot (fast append) whose summary carries each partition's next offset
(`offsets`), a commit id and the task id. It is fenced as Java's `offsetValidator` fences: each
partition's offset in the table must still be the one the task read before writing; a table
whose offsets moved (another reconciler, or a Java sink, wrote the same partition) fails the
commit for the partitions it names, and the files stay unreferenced. A concurrent commit that
did not touch those offsets (another table's writer, a schema change) is retried.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from reconciler.connectors.api import ConnectorError, TableCommitFailed, TopicPartition, Written
from reconciler.connectors.iceberg import datafiles, offsets, upsert
from reconciler.connectors.iceberg.catalog import close_catalog, describe, one_line, open_catalog
from reconciler.connectors.iceberg.config import IcebergSinkSettings

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.table import Table

RETRIES: Final = 4


@dataclass
class TableBatch:
    """What a batch commits to one table: each partition's files, next offset and the offset
    its task found in the table."""

    files: list[dict[str, Any]] = field(default_factory=list)
    next_offsets: dict[TopicPartition, int] = field(default_factory=dict)
    held: dict[TopicPartition, int | None] = field(default_factory=dict)
    flushes: list[upsert.Flush] = field(default_factory=list)  # upsert mode, in partition order


def by_table(written: Sequence[Written]) -> dict[str, TableBatch]:
    batches: dict[str, TableBatch] = {}
    for each in sorted(written, key=lambda w: w.tp):
        for entry in json.loads(each.committable)["tables"]:
            batch = batches.setdefault(entry["table"], TableBatch())
            batch.files += entry["files"]
            batch.flushes += [upsert.Flush(**flush) for flush in entry.get("flushes", [])]
            batch.next_offsets[each.tp] = each.offset
            batch.held[each.tp] = entry["held"]
    return batches


def commit(settings: IcebergSinkSettings, group: str, written: Sequence[Written]) -> None:
    """One snapshot per table; TableCommitFailed naming the partitions of the tables that failed."""
    catalog = open_catalog(settings.catalog_name, settings.catalog)
    try:
        failures: list[str] = []
        failed: set[TopicPartition] = set()
        for name, batch in sorted(by_table(written).items()):
            try:
                _commit_table(catalog, settings, group, name, batch)
            except ConnectorError as exc:
                failures.append(exc.message)
                failed |= set(batch.next_offsets)
        if failures:
            raise TableCommitFailed("; ".join(failures), sorted(failed))
    finally:
        close_catalog(catalog)


def _commit_table(catalog: Catalog, settings: IcebergSinkSettings, group: str, name: str, batch: TableBatch) -> None:
    from pyiceberg.exceptions import CommitFailedException

    branch = settings.table_config(name).commit_branch
    where = describe(settings.catalog)
    files = [datafiles.from_json(node) for node in batch.files]
    for attempt in range(RETRIES):
        try:
            table = catalog.load_table(name)
            held = offsets.table_offsets(table, branch, {t for t, _ in batch.next_offsets}, group)
            _fence(name, held, batch)
            summary = {**offsets.summary_update(held, batch.next_offsets, group),
                       offsets.COMMIT_ID: str(uuid.uuid4()), offsets.TASK_ID: f"{settings.name}-driver"}
            if settings.keyed:
                id_columns = settings.table_config(name).id_columns
                upsert.overwrite(table, summary, branch, upsert.plan(table, branch, id_columns, batch.flushes))
            else:
                append(table, summary, branch, files)
            return
        except CommitFailedException:
            if attempt == RETRIES - 1:
                raise ConnectorError(f"table {name} in the {where}: the commit kept conflicting with other "
                                     f"writers ({RETRIES} attempts)") from None
        except ConnectorError:
            raise
        except Exception as exc:  # noqa: BLE001 - the catalog's and the storage's own errors: one line
            raise ConnectorError(f"cannot commit to table {name} in the {where}: {type(exc).__name__}: "
                                 f"{one_line(exc, settings.catalog)}") from None


def _fence(name: str, held: Mapping[TopicPartition, int], batch: TableBatch) -> None:
    """Java's stale-offsets check: the table must hold what each task read."""
    moved = [f"{t}-{p} (read {batch.held[(t, p)]}, now {held.get((t, p))})"
             for t, p in sorted(batch.held) if held.get((t, p)) != batch.held[(t, p)]]
    if moved:
        raise TableCommitFailed(f"cannot commit to table {name}: another writer moved its offsets of "
                                f"{', '.join(moved)}; check that no other connector writes these partitions to it",
                                [tp for tp in batch.next_offsets])


def append(table: Table, summary: dict[str, str], branch: str | None, files: Sequence[Any]) -> None:
    """One fast-append snapshot of `files` (none: a snapshot that only moves offsets)."""
    from pyiceberg.table.refs import MAIN_BRANCH

    transaction = table.transaction()
    with transaction.update_snapshot(snapshot_properties=summary, branch=branch or MAIN_BRANCH).fast_append() as add:
        for data_file in files:
            add.append_data_file(data_file)
    transaction.commit_transaction()


def held_offsets(settings: IcebergSinkSettings, group: str, partitions: Sequence[TopicPartition]) -> dict[
        TopicPartition, int]:
    """Before a batch: where every table holds each partition up to. Only when every record goes
    to every table (`iceberg.tables` without a route field) is that a position for the whole
    connector: the smallest of the tables', and none when one table holds nothing of the
    partition. Routed records start from the group; each table skips what it holds (`task`)."""
    from pyiceberg.exceptions import NoSuchTableError

    catalog = open_catalog(settings.catalog_name, settings.catalog)  # a new SQL catalog's tables made once, here
    try:
        if settings.route_field is not None or settings.dynamic or not partitions:
            return {}
        topics = {t for t, _ in partitions}
        smallest: dict[TopicPartition, int] | None = None
        for name in settings.tables:
            try:
                table = catalog.load_table(name)
            except NoSuchTableError:
                return {}
            except Exception as exc:  # noqa: BLE001 - one line, whatever the catalog raised
                raise ConnectorError(f"cannot read table {name} in the {describe(settings.catalog)}: "
                                     f"{one_line(exc, settings.catalog)}") from None
            found = offsets.table_offsets(table, settings.table_config(name).commit_branch, topics, group)
            smallest = found if smallest is None else {tp: min(o, found[tp]) for tp, o in smallest.items() if tp in found}
        return {tp: o for tp, o in (smallest or {}).items() if tp in set(partitions)}
    finally:
        close_catalog(catalog)


def rewind(settings: IcebergSinkSettings, group: str, requested: Mapping[TopicPartition, int | None]) -> None:
    """A KIP-875 alter or reset: every table holding offsets of these partitions gets a snapshot
    without data that moves them (None removes them). Rows already committed stay."""
    catalog = open_catalog(settings.catalog_name, settings.catalog)
    try:
        topics = {t for t, _ in requested}
        for name in _tables(catalog, settings):
            table = catalog.load_table(name)
            branch = settings.table_config(name).commit_branch
            held = offsets.table_offsets(table, branch, topics, group)
            if not held:
                continue
            summary = {**offsets.summary_update(held, requested, group), offsets.COMMIT_ID: str(uuid.uuid4()),
                       offsets.TASK_ID: f"{settings.name}-offsets"}
            append(table, summary, branch, [])
    finally:
        close_catalog(catalog)


def _tables(catalog: Catalog, settings: IcebergSinkSettings) -> list[str]:
    """The configured tables that exist; with dynamic routing, every table of the catalog."""
    from pyiceberg.exceptions import NoSuchTableError

    if not settings.dynamic:
        names = []
        for name in settings.tables:
            try:
                catalog.load_table(name)
            except NoSuchTableError:
                continue
            names.append(name)
        return names
    found: list[str] = []
    pending = list(catalog.list_namespaces())
    while pending:
        namespace = pending.pop()
        found += [".".join(identifier) for identifier in catalog.list_tables(namespace)]
        pending += list(catalog.list_namespaces(namespace))
    return found
