"""Write records to the internal topics in one Kafka transaction: all of them or none.

The transactional id is stable per group (`KafkaSettings.transactional_id`), so starting a
second reconciler on the same group fences the first: the broker aborts the first one's open
transaction and refuses its commit. That is what makes two racing applies safe. Claiming the
id (`claim()`) before reading live state turns it into an optimistic lock: a writer whose
commit succeeds knows nobody else claimed the group between its read and its write.

A long-running process may keep a writer claimed across ticks (`claim(max_age_s=…)`, the
apply's): a claim made before an earlier tick's read still precedes this tick's, and a claim
by anyone since has fenced this producer's epoch, so its commit fails all the same. That spares
an idle tick a new producer and an `InitProducerId`; it suits a writer that can read and plan
again when its commit is fenced (`app.apply`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any, Protocol

from reconciler.errors import Fenced, ReconcilerError
from reconciler.kafka.io.client import ErrorCollector, describe, kafka_error, new_producer, translate
from reconciler.kafka.formats.records import TopicRole
from reconciler.kafka.settings import KafkaSettings
from reconciler.kafka.io.consume import wait_until_stable
from reconciler.kafka.io.kept_listers import KeptListers

LOG = logging.getLogger(__name__)
VISIBLE_WAIT_S = 5.0  # bounded: another producer's open transaction may hold a topic's stable end back


class RecordLike(Protocol):
    """What the writer needs of a record (`reconciler.kafka.formats.records.Record` has these)."""

    @property
    def topic_role(self) -> TopicRole: ...

    @property
    def key(self) -> bytes: ...

    @property
    def value(self) -> bytes | None: ...


def task_transactional_id(group_id: str, connector: str, task: int) -> str:
    """KIP-618 `Worker.taskTransactionalId`: `${group.id}-${connector}-${taskId}`."""
    return f"{group_id}-{connector}-{task}"


def take_over(settings: KafkaSettings, txn_id: str) -> None:
    """Initialise `txn_id`: its epoch is bumped, so an older producer with it (a zombie task)
    can no longer commit, and the transaction it left open is aborted."""
    from confluent_kafka import KafkaException

    producer = new_producer(settings, ErrorCollector(), **{"transactional.id": txn_id})
    try:
        producer.init_transactions(settings.timeout_s)
    except KafkaException as exc:
        raise translate(exc, settings, f"fencing earlier producers of {txn_id}") from exc
    finally:
        producer.flush(0)


def fence_source_tasks(settings: KafkaSettings, connector: str, task_count: int) -> list[str]:
    """Fence the transactional producers of tasks 0..task_count-1 (zombie fencing, docs/state-machine.md#task-count-records), on
    the cluster `settings` reach (the connector's producer cluster). Returns the ids."""
    fenced = [task_transactional_id(settings.group_id, connector, task) for task in range(task_count)]
    for txn_id in fenced:
        take_over(settings, txn_id)
    return fenced


def topic_for(settings: KafkaSettings, role: TopicRole) -> str:
    """The topic name of a record's role."""
    topics = settings.topics
    match TopicRole(role):  # a plain "configs" (a test's record) is the role it names
        case TopicRole.CONFIGS:
            return topics.configs
        case TopicRole.STATUS:
            return topics.status
        case TopicRole.OFFSETS:
            return topics.offsets
        case TopicRole.RECONCILER:
            return topics.reconciler


def _is_fenced(error: Any) -> bool:
    from confluent_kafka import KafkaError

    fenced = {KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH}
    return error is not None and (error.code() in fenced or "fenced" in error.str().lower())


# A writer kept across ticks is claimed again once it has gone this long without a claim or a
# commit: a broker expires a transactional id unused for `transactional.id.expiration.ms` (7
# days by default, less on some clusters), after which a write through it fails.
KEPT_CLAIM_S = 300.0


class TransactionalWriter:
    """One transactional producer for one group; `write()` commits a list of records atomically."""

    def __init__(
        self,
        settings: KafkaSettings,
        *,
        transactional_id: str | None = None,
        after_produce: Callable[[TransactionalWriter, int], None] | None = None,
    ) -> None:
        self._settings = settings
        self.transactional_id = transactional_id or settings.transactional_id
        self._producer: Any = None
        self._errors = ErrorCollector()
        # Called with the count of records produced so far in the open transaction (crash tests).
        self._after_produce = after_produce
        self._used_at = 0.0  # time.monotonic() of the last claim or commit
        self._listers = KeptListers()  # for the visibility wait after each commit

    def __enter__(self) -> TransactionalWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    def claimed(self) -> bool:
        """Whether this writer holds a claim (made by an earlier `claim()`)."""
        return self._producer is not None

    def claim(self, *, max_age_s: float | None = None) -> None:
        """Take the transactional id: aborts a dead writer's open transaction, fences a live one.
        A claim held already is kept; with `max_age_s`, only if it or the last commit is younger."""
        from confluent_kafka import KafkaException

        if self._producer is not None:
            if max_age_s is None or time.monotonic() - self._used_at < max_age_s:
                return
            self.reset()
        producer = new_producer(self._settings, self._errors, **{"transactional.id": self.transactional_id})
        try:
            producer.init_transactions(self._settings.timeout_s)
        except KafkaException as exc:
            raise translate(exc, self._settings, f"initialising transactions as {self.transactional_id}") from exc
        self._producer = producer
        self._used_at = time.monotonic()

    def reset(self) -> None:
        """Give up the claim: the next `claim()` takes the id afresh."""
        self._producer = None

    def write(self, records: Sequence[RecordLike]) -> int:
        """Produce `records` in order in one transaction and commit; zero records → no transaction."""
        # Resolved before the transaction begins, so a bad role cannot leave one open.
        return self.write_placed([(topic_for(self._settings, r.topic_role), r.key, r.value) for r in records])

    def write_placed(self, placed: Sequence[tuple[str, bytes, bytes | None]]) -> int:
        """Produce (topic, key, value) triples in order in one transaction and commit."""
        from confluent_kafka import KafkaException

        if not placed:
            return 0
        self.claim()
        try:
            self._producer.begin_transaction()
            for count, (topic, key, value) in enumerate(placed, start=1):
                self._produce(topic, key, value)
                if self._after_produce is not None:
                    self._after_produce(self, count)
            self._commit()
        except KafkaException as exc:
            raise self._failed(exc) from exc
        LOG.debug("committed %d record(s) as %s", len(placed), self.transactional_id)
        # Read-your-writes for the next command (`apply` then `status`): the commit markers reach
        # the partitions after commit_transaction returns (see `consume.wait_until_stable`).
        late = wait_until_stable(
            self._settings, sorted({topic for topic, _, _ in placed}), VISIBLE_WAIT_S, kept=self._listers
        )
        if late:
            LOG.info(
                "committed as %s, but %s still hold(s) another producer's open transaction",
                self.transactional_id,
                ", ".join(late),
            )
        return len(placed)

    def _produce(self, topic: str, key: bytes, value: bytes | None) -> None:
        while True:
            try:
                self._producer.produce(topic, key=key, value=value)
                return
            except BufferError:  # local queue full: let deliveries drain, then retry
                self._producer.poll(0.1)

    def _commit(self) -> None:
        from confluent_kafka import KafkaException

        # A retriable commit error (e.g. coordinator moving) may be retried as-is (librdkafka docs).
        for attempt in range(3):
            try:
                self._producer.commit_transaction(self._settings.timeout_s)
                self._used_at = time.monotonic()
                return
            except KafkaException as exc:
                error = kafka_error(exc)
                if attempt == 2 or error is None or not error.retriable() or _is_fenced(error):
                    raise

    def _failed(self, exc: Exception) -> ReconcilerError:
        """Translate a failed transaction; abort it when the producer is still usable."""
        from confluent_kafka import KafkaException

        error = kafka_error(exc) if isinstance(exc, KafkaException) else None
        if _is_fenced(error):
            self._producer = None  # fenced producers are unusable
            return Fenced(
                f"another reconciler is applying to group {self._settings.group_id}; this one was fenced",
                hint="nothing from this run was committed; run `reconciler plan` to see what the other "
                "one wrote, then apply again if needed",
            )
        if error is not None and error.fatal():
            self._producer = None
        else:  # abortable or a local error (e.g. a record too large): end the transaction cleanly
            try:
                self._producer.abort_transaction(self._settings.timeout_s)
            except KafkaException as abort_exc:
                LOG.debug("abort failed too: %s", describe(abort_exc))
                self._producer = None  # state unknown: start over with a fresh producer next time
        return ReconcilerError(
            f"writing to Kafka failed, the transaction was not committed: {describe(exc)}{self._errors.explain()}",
            hint=_failed_hint(error),
        )

    def flush(self) -> None:
        """Deliver what was produced so far (inside the open transaction, if one is)."""
        if self._producer is not None:
            self._producer.flush(self._settings.timeout_s)

    def close(self) -> None:
        if self._producer is not None:
            self._producer.flush(self._settings.timeout_s)
            self._producer = None
        self._listers.close()


def _failed_hint(error: Any) -> str:
    """What to do after an aborted transaction. A record the broker refuses for its size is
    refused again by a retry: no hint may promise that one converges."""
    from confluent_kafka import KafkaError

    code = None if error is None else error.code()
    if code in (KafkaError.MSG_SIZE_TOO_LARGE, KafkaError.RECORD_LIST_TOO_LARGE):
        return (
            "the transaction was aborted, not committed; a record is larger than the broker accepts "
            "(its `message.max.bytes`), so a retry fails the same way until what the record holds "
            "shrinks (a connector's tasksMax or config) or the broker's limit grows"
        )
    return (
        "the transaction was aborted, not committed; if the cause was passing (a broker restarting), "
        "retrying the command converges: records are keyed upserts"
    )
