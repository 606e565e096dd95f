"""Read a topic from the beginning to its end, and find where a topic ends.

"The end" of a read is where the broker says a fetch ran out of records: `enable.partition.eof`
makes librdkafka report `_PARTITION_EOF` per partition, empty partitions included, so reading
to the end needs no ListOffsets round trip first. Under read_committed that end is the last
stable offset: an open transaction's records are not read past. Consumers here only
`assign()`: no group join, no commits, nothing left behind in the cluster.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

from reconciler.errors import ReconcilerError
from reconciler.kafka.io.client import (
    ErrorCollector,
    is_unreachable,
    kafka_error,
    new_consumer,
    probe_bootstrap,
    retry_transient,
    translate,
    unreachable,
)
from reconciler.kafka.io.kept_listers import KeptListers
from reconciler.kafka.settings import KafkaSettings

T = TypeVar("T")

BATCH_SIZE = 1000
# consume() waits this long for a batch to fill; short, so a small topic is read in milliseconds.
POLL_S = 0.01


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    topic: str = ""


class PositionLost(ReconcilerError):
    """A partition no longer holds the offset a read was to continue from (records deleted)."""


def reader_overrides(isolation_level: str) -> dict[str, Any]:
    """Consumer settings for reading to the end (EOF events at each partition's end). A position
    that no longer exists is an error, not a silent jump to the end (librdkafka's default)."""
    return {"enable.partition.eof": True, "isolation.level": isolation_level, "auto.offset.reset": "error"}


def partitions_of(consumer: Any, settings: KafkaSettings, topic: str) -> list[int]:
    from confluent_kafka import KafkaException

    try:
        metadata = consumer.list_topics(topic, timeout=settings.timeout_s)
    except KafkaException as exc:
        raise translate(exc, settings, f"fetching metadata of topic {topic}") from exc
    meta = metadata.topics.get(topic)
    if meta is None or meta.error is not None or not meta.partitions:
        detail = meta.error.str() if meta is not None and meta.error is not None else "no partitions"
        raise ReconcilerError(f"topic {topic} is not readable: {detail}")
    return sorted(meta.partitions)


class TopicReader:
    """One consumer assigned to every partition of some topics, kept between reads.

    Each `to_end()` reads from where the previous one stopped (the first: from the beginning of
    each partition) to each partition's end: a long-running reader pays for what was written
    since, not for the whole topic again. The consumer only `assign()`s: no group, no commits.
    """

    def __init__(self, settings: KafkaSettings, *, isolation_level: str = "read_committed") -> None:
        self.settings = settings
        self._errors = ErrorCollector()
        self._consumer = new_consumer(settings, self._errors, **reader_overrides(isolation_level))
        # After the client: a bad setting is reported as such, whatever the address.
        probe_bootstrap(settings)  # a wrong address fails now, not after the clients' timeout
        self.positions: dict[tuple[str, int], int] = {}  # where the next read starts

    def partitions_of(self, topic: str) -> list[int]:
        """The partitions of one topic, which must exist."""
        return partitions_of(self._consumer, self.settings, topic)

    def topic_partitions(self) -> dict[str, list[int]]:
        """The partitions of every topic of the cluster (one metadata request)."""
        from confluent_kafka import KafkaException

        try:
            metadata = self._consumer.list_topics(timeout=self.settings.timeout_s)
        except KafkaException as exc:
            if is_unreachable(kafka_error(exc)):
                raise unreachable(self.settings) from exc
            raise translate(exc, self.settings, "fetching cluster metadata") from exc
        return {name: sorted(meta.partitions) for name, meta in metadata.topics.items() if meta.error is None}

    def assign(self, partitions: Mapping[str, Sequence[int]]) -> None:
        """Read these partitions from now on: new ones from their beginning, the others from
        where the last read stopped.

        Take them from this reader's own metadata (`partitions_of`, `topic_partitions`), not
        from memory: librdkafka looks up where a partition begins only once it knows the
        partition's leader, and when it does not yet, it asks again 500 ms later. Measured: a
        fresh reader of a one-partition topic, assigned without metadata, took 520 ms to the
        end of it; with metadata first, 22 ms."""
        from confluent_kafka import OFFSET_BEGINNING

        for topic, ids in partitions.items():
            for partition in ids:
                self.positions.setdefault((topic, partition), OFFSET_BEGINNING)

    def to_end(self, ends: dict[tuple[str, int], int] | None = None) -> Iterator[list[Any]]:
        """Lists of confluent-kafka Messages (no error events) up to each partition's end.

        Batches, not single messages: this is the hot loop of reading 100,000s of records.
        Order is kept within each partition, which is all Connect's readers rely on (every key
        lives in exactly one partition). `ends`, when given, receives where each (topic,
        partition) ended (under read_committed, the last stable offset). Raises
        `PositionLost` when a partition no longer holds the position to continue from.
        """
        from confluent_kafka import TopicPartition

        assignment = [TopicPartition(topic, p, offset) for (topic, p), offset in self.positions.items()]
        self._consumer.assign(assignment)  # (re)starts each partition's fetch: its EOF comes again
        reached = {} if ends is None else ends
        yield from _drain(self._consumer, self.settings, set(self.positions), self._errors, reached)
        self._remember(assignment, reached)

    def _remember(self, assignment: list[Any], ends: dict[tuple[str, int], int]) -> None:
        """Where the next read starts: after the last record delivered (records may have come
        after a partition's EOF, while others were still read) or at the end, if further."""
        for tp in self._consumer.position(assignment):
            key = (tp.topic, tp.partition)
            self.positions[key] = max(tp.offset, ends.get(key, tp.offset))

    def close(self) -> None:
        self._consumer.close()


def read_to_end(settings: KafkaSettings, topic: str, *, isolation_level: str = "read_committed") -> Iterator[Message]:
    """Every record of `topic`, in offset order within each partition, up to each partition's end.

    Raises ReconcilerError when no progress is made for `settings.timeout_s` (a stalled broker).
    """
    for msg in raw_to_end(settings, [topic], isolation_level=isolation_level):
        yield Message(partition=msg.partition(), offset=msg.offset(), key=msg.key(), value=msg.value(), topic=topic)


def raw_to_end(
    settings: KafkaSettings, topics: Sequence[str], *, isolation_level: str = "read_committed"
) -> Iterator[Any]:
    """confluent-kafka Messages (errors filtered out) of several topics read to the end at once."""
    for batch in batches_to_end(settings, topics, isolation_level=isolation_level):
        yield from batch


def batches_to_end(
    settings: KafkaSettings,
    topics: Sequence[str],
    *,
    isolation_level: str = "read_committed",
    ends: dict[tuple[str, int], int] | None = None,
) -> Iterator[list[Any]]:
    """`TopicReader.to_end` once, from the beginning of every partition of `topics` (each of
    them must exist), with one consumer for all: one connection and one set of fetch round trips."""
    reader = TopicReader(settings, isolation_level=isolation_level)
    try:
        reader.assign({topic: reader.partitions_of(topic) for topic in topics})
        yield from reader.to_end(ends)
    finally:
        reader.close()


def _drain(
    consumer: Any,
    settings: KafkaSettings,
    pending: set[tuple[str, int]],
    errors: ErrorCollector,
    ends: dict[tuple[str, int], int],
) -> Iterator[list[Any]]:
    """Consume in batches until every (topic, partition) in `pending` reported EOF."""
    from confluent_kafka import Message

    error_of = Message.error
    deadline = time.monotonic() + settings.timeout_s
    while pending:
        batch = consumer.consume(num_messages=BATCH_SIZE, timeout=POLL_S)
        if batch:
            deadline = time.monotonic() + settings.timeout_s
        elif time.monotonic() > deadline:
            raise ReconcilerError(
                f"reading from {settings.bootstrap_servers} made no progress for {settings.timeout_s:g}s; "
                f"not read to the end: {_names(pending)}{errors.explain()}",
                hint="check that the broker is healthy; raise --timeout for a slow cluster",
            )
        if not any(map(error_of, batch)):  # the common case, checked without a Python loop
            if batch:
                yield batch
            continue
        _handle_events(batch, pending, ends)
        records = [msg for msg in batch if msg.error() is None]
        if records:
            yield records


def _handle_events(batch: list[Any], pending: set[tuple[str, int]], ends: dict[tuple[str, int], int]) -> None:
    from confluent_kafka import KafkaError

    for msg in batch:
        error = msg.error()
        if error is None:
            continue
        if error.code() == KafkaError._PARTITION_EOF:
            pending.discard((msg.topic(), msg.partition()))
            ends[(msg.topic(), msg.partition())] = msg.offset()
        elif error.code() == KafkaError._AUTO_OFFSET_RESET:
            raise PositionLost(f"reading topic {msg.topic()} [{msg.partition()}]: {error.str()}")
        elif error.fatal() or not error.retriable():
            raise ReconcilerError(f"reading topic {msg.topic()} failed: {error.str()} ({error.name()})")


def _names(pending: set[tuple[str, int]]) -> str:
    return ", ".join(f"{topic} [{partition}]" for topic, partition in sorted(pending))


# ListOffsets' timestamps for "where the log starts" and "where it ends" (at the asking
# consumer's isolation level: read_committed answers the last stable offset).
EARLIEST = -2  # librdkafka's OFFSET_BEGINNING
LATEST = -1  # librdkafka's OFFSET_END


def end_offsets(
    settings: KafkaSettings, topic: str, *, isolation_level: str = "read_committed", kept: KeptListers | None = None
) -> dict[int, int]:
    """partition → end offset: the offset the next record will get (read_uncommitted), or the
    last stable offset, before which no transaction is open (read_committed). One ListOffsets
    request per broker, as Java's `KafkaConsumer.endOffsets` does, retried while the answer is
    retriable (a partition whose leader is moving or just being elected), as Java's is.
    `kept`: asked through its consumers (a process that asks every tick), else a new one."""
    listing = f"listing the end offsets of {topic}"
    ends = _listed(
        settings,
        listing,
        isolation_level,
        lambda c: list_offsets(c, settings, _partitions(c, settings, [topic]), LATEST),
        kept=kept,
    )
    return {partition: offset for (_, partition), offset in ends.items()}


class LogBounds(NamedTuple):
    """Where a partition's records lie, and where a reader at some isolation level stops."""

    start: int  # the log start: the first offset still held (retention and DeleteRecords move it)
    end: int  # the log end (high watermark): the offset the next record will get
    readable: int  # the end at the reader's isolation level (read_committed: the last stable offset)


def log_bounds(
    settings: KafkaSettings, topics: Sequence[str], *, isolation_level: str = "read_committed"
) -> dict[tuple[str, int], LogBounds]:
    """(topic, partition) → its `LogBounds`, for every partition of `topics`: one ListOffsets
    request per broker for each of the three.

    The readable end is asked first: it is at most the log end at any moment, so asked before
    the log end it stays at or below it, as a reader relies on, however fast the topics grow."""
    if not topics:
        return {}  # (librdkafka refuses a ListOffsets of no partition as an invalid argument)
    listing = f"listing the offsets of {', '.join(topics)}"

    def first(consumer: Any) -> tuple[dict[str, list[int]], dict[tuple[str, int], int], dict[tuple[str, int], int]]:
        partitions = _partitions(consumer, settings, topics)
        readable = list_offsets(consumer, settings, partitions, LATEST)
        return partitions, readable, list_offsets(consumer, settings, partitions, EARLIEST)  # (any isolation level)

    partitions, readable, start = _listed(settings, listing, isolation_level, first)
    end = readable
    if isolation_level != "read_uncommitted":
        end = _listed(settings, listing, "read_uncommitted", lambda c: list_offsets(c, settings, partitions, LATEST))
    return {tp: LogBounds(start[tp], end[tp], readable[tp]) for tp in readable}


def log_starts(
    settings: KafkaSettings, partitions: Mapping[str, Sequence[int]], doing: str, *, max_delay_s: float = 0.5
) -> dict[tuple[str, int], int]:
    """(topic, partition) → its log start, once every partition's leader answers for it."""
    return _listed(
        settings,
        doing,
        "read_uncommitted",
        lambda c: list_offsets(c, settings, partitions, EARLIEST),
        max_delay_s=max_delay_s,
    )


def list_offsets(
    consumer: Any, settings: KafkaSettings, partitions: Mapping[str, Sequence[int]], which: int
) -> dict[tuple[str, int], int]:
    """(topic, partition) → its offset at `which` (`EARLIEST` or `LATEST`, at the consumer's
    isolation level). Raises the KafkaException of the first partition that got an error.

    Asked through the consumer's `offsets_for_times`, not the admin client's `list_offsets`.
    Both send one ListOffsets request per leader, but the consumer's call is synchronous on the
    calling thread, and the admin's is not: the test suite's process died once of a segmentation
    fault inside `AdminClient.list_offsets` (CI of 564f996). Its leader lookup
    (rdkafka_partition.c, `rd_kafka_topic_partition_list_query_leaders_async_worker`), when a
    leader is not in the client's metadata cache, registers for cache updates and then goes on
    using its request on the calling thread, while librdkafka's own thread may already have
    completed and freed it: one way it can crash, and none the consumer's lookup has."""
    from confluent_kafka import KafkaException, TopicPartition

    asked = [TopicPartition(topic, p, which) for topic, ids in partitions.items() for p in ids]
    if not asked:
        return {}  # librdkafka refuses an empty list as an invalid argument
    answered = consumer.offsets_for_times(asked, timeout=settings.timeout_s)
    for tp in answered:
        if tp.error is not None:
            raise KafkaException(tp.error)
    return {(tp.topic, tp.partition): tp.offset for tp in answered}


def _partitions(consumer: Any, settings: KafkaSettings, topics: Sequence[str]) -> dict[str, list[int]]:
    return {topic: partitions_of(consumer, settings, topic) for topic in topics}


def _listed(
    settings: KafkaSettings,
    doing: str,
    isolation_level: str,
    listing: Callable[[Any], T],
    *,
    max_delay_s: float = 0.5,
    kept: KeptListers | None = None,
) -> T:
    """`listing(consumer)`, retried while its answer is transient, each time with a new consumer
    at `isolation_level` (it only asks: no group join, no fetch). A new one, so that a retry
    looks the leaders up afresh: a consumer kept watching a new topic was measured answering
    "not leader" for minutes (bench/h2h_sides.py). With `kept`, the first try may use a kept
    consumer; one that fails is closed, not kept, so the retry's is new all the same. Without,
    the consumers are kept for this call only."""
    from confluent_kafka import KafkaException

    consumers = kept if kept is not None else KeptListers()

    def attempt() -> T:
        consumer = consumers.take(settings, isolation_level)
        try:
            answer = listing(consumer)
        except BaseException:
            consumer.close()
            raise
        consumers.give_back(settings, isolation_level, consumer)
        return answer

    try:
        return retry_transient(settings, attempt, max_delay_s=max_delay_s)
    except KafkaException as exc:
        raise translate(exc, settings, doing) from exc
    finally:
        if kept is None:
            consumers.close()


def wait_until_stable(
    settings: KafkaSettings, topics: Sequence[str], wait_s: float, *, kept: KeptListers | None = None
) -> list[str]:
    """Wait until each topic's last stable offset reaches the end it has now; the topics that
    did not within `wait_s` (an unrelated transaction still open there, typically). `kept`:
    asked through its consumers.

    A producer's commit_transaction returns once the coordinator has logged the decision; the
    commit markers reach the partitions a moment later, and until they do, read_committed
    readers stop before the transaction's records. Waiting for that after a commit gives the
    next reader (`reconciler offsets`, the next tick's sinks) what was just committed.
    """
    deadline = time.monotonic() + min(wait_s, settings.timeout_s)
    ends = {topic: end_offsets(settings, topic, isolation_level="read_uncommitted", kept=kept) for topic in topics}
    pending = list(topics)
    delay = 0.005
    while pending:
        pending = [topic for topic in pending if _lags(end_offsets(settings, topic, kept=kept), ends[topic])]
        if not pending or time.monotonic() + delay > deadline:
            return pending
        time.sleep(delay)
        delay = min(delay * 2, 0.2)
    return pending


def _lags(stable: dict[int, int], ends: dict[int, int]) -> bool:
    return any(stable.get(partition, end) < end for partition, end in ends.items())
