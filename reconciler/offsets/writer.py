"""The offsets executor's transactional writer: records to named topics, all or nothing.

The project's `TransactionalWriter` places records by role (configs, offsets, reconciler…); an
offsets request may also write a connector-specific offsets topic (`offsets.storage.topic`),
so this writer also takes (topic, key, value) triples (the base class's `write_placed`), with
everything else shared: claiming the id, fencing, retries, translating librdkafka failures.

Each connector's requests run under their own transactional id, `reconciler-<group>-offsets-<name>`:
an executor that claims it fences any other executor of the same connector's request (an
`apply` and a `run` tick racing), whose next step then fails instead of writing.
"""

from __future__ import annotations

from collections.abc import Sequence

from reconciler.kafka.io.produce import RecordLike, TransactionalWriter, topic_for
from reconciler.kafka.settings import KafkaSettings

Placed = tuple[str, bytes, bytes | None]  # topic, key, value (None: tombstone)


def executor_transactional_id(settings: KafkaSettings, connector: str) -> str:
    return f"{settings.transactional_id}-offsets-{connector}"


class OffsetsWriter(TransactionalWriter):
    def __init__(self, settings: KafkaSettings, connector: str) -> None:
        super().__init__(settings, transactional_id=executor_transactional_id(settings, connector))
        self.settings = settings
        self.written = 0  # records committed so far (what `reconciler apply` reports it wrote)

    def __enter__(self) -> OffsetsWriter:
        return self

    def write_placed(self, placed: Sequence[Placed]) -> int:
        count = super().write_placed(placed)
        self.written += count
        return count

    def place(self, records: Sequence[RecordLike]) -> list[Placed]:
        """Records by role → (topic, key, value)."""
        return [(topic_for(self.settings, r.topic_role), r.key, r.value) for r in records]

    def write_records(self, records: Sequence[RecordLike], extra: Sequence[Placed] = ()) -> int:
        """`extra` (e.g. offsets records for a named topic) first, then the role-placed records."""
        return self.write_placed([*extra, *self.place(records)])
