"""The offsets executor's transactional writer: records to named topics, all or nothing.

The project's `TransactionalWriter` places records by role (configs, offsets, reconciler…); an
offsets request may also write a connector-specific offsets topic (`offsets.storage.topic`),
so this writer takes (topic, key, value) triples and reuses everything else: claiming the id,
fencing, retries, and turning librdkafka failures into the project's errors.

Each connector's requests run under their own transactional id, `reconciler-<group>-offsets-<name>`:
an executor that claims it fences any other executor of the same connector's request (an
`apply` and a `run` tick racing), whose next step then fails instead of writing.
"""

from __future__ import annotations

from collections.abc import Sequence

from reconciler.kafka.produce import RecordLike, TransactionalWriter, topic_for
from reconciler.kafka.settings import KafkaSettings

Placed = tuple[str, bytes, bytes | None]  # topic, key, value (None: tombstone)


def executor_transactional_id(settings: KafkaSettings, connector: str) -> str:
    return f"{settings.transactional_id}-offsets-{connector}"


class OffsetsWriter(TransactionalWriter):
    def __init__(self, settings: KafkaSettings, connector: str) -> None:
        super().__init__(settings, transactional_id=executor_transactional_id(settings, connector))
        self.settings = settings

    def __enter__(self) -> OffsetsWriter:
        return self

    def place(self, records: Sequence[RecordLike]) -> list[Placed]:
        """Records by role → (topic, key, value)."""
        return [(topic_for(self.settings, r.topic_role), r.key, r.value) for r in records]

    def write_placed(self, placed: Sequence[Placed]) -> int:
        """Produce `placed` in order in one transaction and commit; nothing → no transaction."""
        from confluent_kafka import KafkaException

        if not placed:
            return 0
        self.claim()
        try:
            self._producer.begin_transaction()
            for topic, key, value in placed:
                self._produce(topic, key, value)
            self._commit()
        except KafkaException as exc:
            raise self._failed(exc) from exc
        return len(placed)

    def write_records(self, records: Sequence[RecordLike], extra: Sequence[Placed] = ()) -> int:
        """`extra` (e.g. offsets records for a named topic) first, then the role-placed records."""
        return self.write_placed([*extra, *self.place(records)])
