"""The connector plugin API: Connect-shaped, Pythonic, and usable inside Spark partitions.

A plugin is a `SourceConnector` or `SinkConnector` subclass plus its task class. The runtime:

* on the driver: `load_connector(name)()` → `validate(config)` (problems mark the connector
  FAILED) → `task_configs(config, max_tasks)` (plain `dict[str, str]`, committed to the config
  topic like Connect's `task-<name>-<i>` records, pickled into Spark partitions as they are);
* in a Spark partition: `connector.task_class(...)`, then the task methods below.

Sources return *columnar* batches (`SourceBatch`): building one object per record costs more
than generating the record (measured ~2.7 s per million frozen dataclasses versus ~0.6 s for
two lists of bytes), and the runtime only needs each partition's offset after the batch,
because records and offsets are written in one Kafka transaction. `SourceBatch.from_records`
accepts Connect-style `SourceRecord`s for plugins that prefer them.

Sinks receive Arrow record batches (`sink_schema()`), the form the Spark runtime moves data in.
The records and batches themselves are defined in `connectors.batches` and exported from here.

This module imports no Kafka, Spark or pyarrow at runtime (pyarrow only inside the two sink
helpers), so the CLI can validate configs without the `spark` extra.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, TypeVar

from reconciler.connectors.batches import ErrantRecordReporter as ErrantRecordReporter
from reconciler.connectors.batches import PartitionKey as PartitionKey
from reconciler.connectors.batches import Primitive as Primitive
from reconciler.connectors.batches import RecordFailure as RecordFailure
from reconciler.connectors.batches import SinkRecord as SinkRecord
from reconciler.connectors.batches import SourceBatch as SourceBatch
from reconciler.connectors.batches import SourceOffset as SourceOffset
from reconciler.connectors.batches import SourcePartition as SourcePartition
from reconciler.connectors.batches import SourceRecord as SourceRecord
from reconciler.connectors.batches import Stage as Stage
from reconciler.connectors.batches import headers_type as headers_type
from reconciler.connectors.batches import partition_from_key as partition_from_key
from reconciler.connectors.batches import partition_key as partition_key
from reconciler.connectors.batches import records_to_batch as records_to_batch
from reconciler.connectors.batches import sink_schema as sink_schema
from reconciler.connectors.configdef import ConfigDef as ConfigDef
from reconciler.connectors.configdef import ConfigProblem as ConfigProblem
from reconciler.connectors.configdef import ConnectorConfig as ConnectorConfig
from reconciler.connectors.configdef import Type as Type
from reconciler.connectors.configdef import topic_names as topic_names

# Re-exported: plugins import the whole API from here.
from reconciler.core.kinds import Kind
from reconciler.core.offsets_rules import TopicPartition as TopicPartition  # a sink's Kafka partition
from reconciler.errors import ReconcilerError

if TYPE_CHECKING:
    import pyarrow as pa

TaskConfig = dict[str, str]

# Keys the built-in connectors add to each task config to tell a task which share is its own.
TASK_INDEX = "task.index"
TASK_COUNT = "task.count"

_S = TypeVar("_S")


class ConnectorError(ReconcilerError):
    """A connector or task reported a problem (bad config, unreadable input, bad record)."""


class InvalidConnectorConfig(ConnectorError):
    """`validate` found problems; raised by tasks handed a config that was never validated."""

    def __init__(self, problems: Sequence[ConfigProblem]) -> None:
        super().__init__("; ".join(p.render() for p in problems))
        self.problems = list(problems)

    def __reduce__(self) -> tuple[type[InvalidConnectorConfig], tuple[list[ConfigProblem]]]:
        # Errors raised in Spark partitions may travel pickled; rebuild from the problems.
        return (InvalidConnectorConfig, (self.problems,))


def valid_or_raise(read: tuple[_S, Sequence[ConfigProblem]]) -> _S:
    """The settings a connector's `read(config)` parsed, or InvalidConnectorConfig with every problem."""
    settings, problems = read
    if problems:
        raise InvalidConnectorConfig(problems)
    return settings


class OffsetsRefused(ConnectorError):
    """Raised by `validate_offsets` or `alter_offsets` to refuse an offsets request; the message
    is shown to the user.

    The Python counterpart of what Connect's `alterOffsets` throws to refuse a request
    (`UnsupportedOperationException`, or a `ConnectException` for offsets it cannot accept).
    """


# --- tasks ----------------------------------------------------------------------------------


class SourceTask(ABC):
    """Produces records from an external system; constructed with its task config."""

    def __init__(self, task_config: Mapping[str, str]) -> None:
        self.task_config = dict(task_config)

    @abstractmethod
    def poll_batch(
        self, committed: Mapping[PartitionKey, SourceOffset], max_records: int
    ) -> SourceBatch:
        """The next at most `max_records` records after the `committed` offsets.

        `committed` holds the connector's committed source offsets (all of its partitions, or
        at least this task's). The answer must depend only on `committed` and the external
        data, never on earlier calls: after a crash the runtime aborts the transaction and
        calls again with the same offsets, expecting the same records (exactly-once).
        An empty batch means nothing new.
        """

    def stop(self) -> None:
        """Release resources; the default holds none."""

    @classmethod
    def exhausted(cls, task_config: Mapping[str, str], committed: Mapping[PartitionKey, SourceOffset]) -> bool:
        """Whether `poll_batch` is certain to return nothing, records or offsets, after
        `committed`, known from the config and the offsets alone (no external system): the
        runtime then runs no Spark job for the task this batch, as a datagen whose count is
        spent. Called on the driver, without constructing the task; must not raise. The
        default, False, is always safe: the task is polled."""
        return False


class SinkTask(ABC):
    """Writes Kafka records to an external system. Lifecycle, as Connect's:

    `start(config)` → `open(partitions)` → `write(batch)`… → `pre_commit(offsets, closing)`…
    → `stop()`. A (topic, partition) is given to one task instance at a time.

    `errant_reporter` is set by the runtime before `start` (Connect's
    `context.errantRecordReporter()`): the connector's `errors.*` keys applied to the records a
    task cannot write, its dead letter queue included (`connectors.errant`, docs/connectors.md).
    """

    errant_reporter: ErrantRecordReporter | None = None

    def start(self, task_config: Mapping[str, str]) -> None:
        self.task_config = dict(task_config)

    @abstractmethod
    def open(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """Take the partitions; return, for those where the task holds data durably, the offset
        after the last record it holds. The runtime starts each partition at the larger of this
        and the group's committed offset (or the earliest offset when neither exists).
        """

    @abstractmethod
    def write(self, batch: pa.RecordBatch) -> None:
        """Take records (schema `sink_schema()`, offsets ascending per partition).

        May buffer; records the task already holds durably (re-delivered after a crash) must be
        ignored rather than written twice.
        """

    @abstractmethod
    def pre_commit(
        self, offsets: Mapping[TopicPartition, int], closing: bool
    ) -> dict[TopicPartition, int]:
        """Offsets safe to commit, given the runtime's positions (`offsets`: next offset to read
        per partition, everything below it having been passed to `write`).

        `closing=True` (KIP-275) means the task is about to close, so it should flush what it
        buffers; the returned offsets are then committed to the group, after the data.
        """

    def committable(self) -> str | None:
        """Called after pre_commit(closing=True): JSON text describing what this task wrote that
        the connector's driver must commit (a table's new data files); None: nothing to commit
        (or a sink that commits itself, the default). Only `TableSinkConnector`s' tasks return
        one; the runtime hands it to `TableSinkConnector.commit` as `Written.committable`."""
        return None

    def stop(self) -> None:
        """Drop anything not flushed (it will be re-delivered); the default holds nothing."""


# --- connectors -----------------------------------------------------------------------------


class Connector(ABC):
    """A plugin's entry point: validates its config and splits the work into task configs.

    Instances are created with no arguments and hold no state between calls.
    """

    kind: ClassVar[Kind]
    # The keys the plugin reads, typed (`reconciler.connectors.configdef`). With one, the
    # default `validate` checks their values, and `reconciler validate` reports keys that
    # neither the plugin nor Connect defines; without one, only `validate` runs.
    config_def: ClassVar[ConfigDef | None] = None
    # The plugin's version (Connect's `Versioned.version()`), reported in every status the
    # runtime writes for the connector and its tasks (Kafka 4's `version` field, KIP-891) and in
    # `GET /connector-plugins`. None: the version of the distribution that installed the
    # plugin's package (`registry.plugin_version`).
    version: ClassVar[str | None] = None
    # The records' parts ("key", "value") whose Connect converter the plugin applies itself
    # (`connectors.converters`: JsonConverter, StringConverter, ByteArrayConverter). For them
    # `reconciler validate` accepts the three classes and checks their settings; for the others
    # only the converters that leave bytes as they are (`connectors.unapplied`).
    converters: ClassVar[frozenset[str]] = frozenset()

    def validate(self, config: ConnectorConfig) -> list[ConfigProblem]:
        """Problems with `config`, each naming its key; empty when the config is usable.

        Called before deploy (`reconciler validate`, `plan`, `apply`) and when the connector
        starts. The default checks the values of the keys `config_def` declares.
        """
        return [] if self.config_def is None else self.config_def.validate(config)

    @abstractmethod
    def task_configs(self, config: ConnectorConfig, max_tasks: int) -> list[TaskConfig]:
        """At most `max_tasks` task configs (plain strings: they are stored and pickled)."""

    def task_limit(self, config: ConnectorConfig) -> int | None:
        """The most tasks this connector can use with `config` (None: no limit of its own).
        A `tasks.max` above it is an error at `validate`, naming the limit, rather than a
        setting the connector quietly ignores (datagen uses at most `shards` tasks)."""
        return None

    def task_imports(self, config: ConnectorConfig) -> Sequence[str]:
        """Modules this connector's tasks import when they first run with `config`, beyond its
        own module: a local session's Python daemon imports them before it forks the batch's
        workers (`runtime/spark/first_imports.py`). Only modules that start no thread when
        imported: one that starts a thread keeps the daemon from being forked early at all."""
        return ()

    def stop(self, config: ConnectorConfig) -> None:
        """Called once when the worker stops running the connector: it was RUNNING and is now
        paused, stopped or deleted (Connect's `Connector.stop()`). Release what the connector
        holds outside this process for `config`. Raising is logged and changes nothing: the
        connector still reaches its target state and can be resumed (KIP-875, acceptance case A10
        in docs/state-machine.md#acceptance-cases)."""


class SourceConnector(Connector):
    kind: ClassVar[Kind] = Kind.SOURCE
    task_class: ClassVar[type[SourceTask]]

    def validate_offsets(
        self, config: ConnectorConfig, offsets: Mapping[PartitionKey, SourceOffset | None]
    ) -> None:
        """Raise `OffsetsRefused` for partitions or offsets the connector's tasks cannot read.

        The checking half of Connect's `alterOffsets`, split off because a request is declared
        long before it runs: `reconciler validate`, `plan` and `apply` call it on every alter
        request (reporting a refusal at the entry's `file:line:col`, so nothing is written), and
        the runtime calls it again just before `alter_offsets`. It must be pure and fast: no
        files, network or Spark (the file the offset names may live on another machine).
        `config` is valid (`validate` found no problem). A None offset (a tombstone) removes the
        partition's offset; Connect's own connectors accept one for any partition, so that
        garbage can be cleaned up. The default accepts everything.
        """

    def alter_offsets(
        self, config: ConnectorConfig, offsets: Mapping[PartitionKey, SourceOffset | None]
    ) -> bool:
        """Called before the framework writes altered (or, with all-None, reset) offsets, once
        `validate_offsets` accepted them; it may act on the external system.

        Return True when the connector handled the change or validated it (Connect's guidance:
        every override that does not refuse returns true; the outcome then says "altered
        successfully"), False (the default) when it knows nothing of these offsets (the outcome
        adds that offsets managed elsewhere must be changed there); raise `OffsetsRefused` to refuse.
        """
        return False


class SinkConnector(Connector):
    kind: ClassVar[Kind] = Kind.SINK
    task_class: ClassVar[type[SinkTask]]

    def validate_offsets(
        self, config: ConnectorConfig, offsets: Mapping[TopicPartition, int | None]
    ) -> None:
        """As `SourceConnector.validate_offsets`. The offsets' shape (Kafka topic-partitions,
        offsets >= 0) is checked before this is called, as Connect's `SinkUtils` checks it."""

    def alter_offsets(
        self, config: ConnectorConfig, offsets: Mapping[TopicPartition, int | None]
    ) -> bool:
        """As `SourceConnector.alter_offsets`; None removes a partition's committed offset."""
        return False


@dataclass(frozen=True, kw_only=True)
class Written:
    """One range's contribution to a table sink's batch, as the driver sees it."""

    topic: str
    partition: int
    offset: int  # the next offset (pre_commit's safe offset): what the table is to hold
    committable: str  # what the task's committable() returned
    # Where the range was read from: the larger of the table's offset (`table_offsets`) and the
    # group's. A table offset past it at commit time means another writer committed these
    # records meanwhile (the commit is fenced). None: not read from a range (no fencing).
    start: int | None = None

    @property
    def tp(self) -> TopicPartition:
        return (self.topic, self.partition)


class TableCommitFailed(ConnectorError):
    """`TableSinkConnector.commit` failed for `partitions` (None: for every partition written).
    Their tasks are FAILED and their group offsets not committed; files stay unreferenced."""

    def __init__(self, message: str, partitions: Sequence[TopicPartition] | None = None) -> None:
        super().__init__(message)
        self.partitions = None if partitions is None else frozenset(partitions)


class TableSinkConnector(SinkConnector):
    """A sink whose tasks write data files and whose driver commits them: one commit per table
    per batch carrying each partition's next offset (Delta `txn` actions, an Iceberg snapshot's
    summary). The table is where the offsets live; the group follows it.

    The runtime (`runtime.sink.job`): `table_offsets` before the ranges are planned (each range
    starts at the larger of the table's and the group's offset); the tasks write and return
    `committable()`; `commit` with the successful ranges; then the group commit. A crash before
    `commit` leaves files nothing references; one after it, before the group commit, is undone by
    the next batch starting from the table's offsets. A KIP-875 alter must move the table's
    offsets too (`alter_offsets`): the group alone would be overruled by the table's.
    """

    @abstractmethod
    def table_offsets(
        self, config: ConnectorConfig, partitions: Sequence[TopicPartition]
    ) -> dict[TopicPartition, int]:
        """On the driver before the job: the next offset the table(s) hold per partition (Delta
        txn actions / Iceberg snapshot summary); partitions the table knows nothing of are left
        out. A partition written to several tables: the smallest of theirs (each table's commit
        then skips what it holds already). The runtime starts each range at the larger of this
        and the group's offset, so a crash after the table commit and before the group commit
        duplicates nothing."""

    @abstractmethod
    def commit(self, config: ConnectorConfig, written: Sequence[Written]) -> None:
        """On the driver after the job: one commit per table carrying the files and each
        partition's offset. Fenced: a partition whose offset in the table moved since
        `table_offsets` (past `Written.start`: another writer) makes the commit fail, naming it.
        Raise ConnectorError (TableCommitFailed to name the partitions) on failure: the tasks of
        those partitions are FAILED, the group is not committed for them, orphan files stay
        unreferenced."""


def plain_task_config(config: ConnectorConfig, **extra: str) -> TaskConfig:
    """A task config: the connector config without null values, plus `extra`."""
    task = {key: value for key, value in config.items() if value is not None}
    task.update(extra)
    return task


def share_configs(config: ConnectorConfig, tasks: int) -> list[TaskConfig]:
    """`tasks` task configs that differ only by `task.index` (each task takes its share)."""
    return [
        plain_task_config(config, **{TASK_INDEX: str(i), TASK_COUNT: str(tasks)})
        for i in range(tasks)
    ]


def task_share(task_config: Mapping[str, str]) -> tuple[int, int]:
    """(index, count) from a task config made by `share_configs`; (0, 1) when absent."""
    return int(task_config.get(TASK_INDEX, "0")), int(task_config.get(TASK_COUNT, "1"))
