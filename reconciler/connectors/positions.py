"""Source offsets that are a position in a stream (`{"position": n}`, as Kafka Connect's
FileStreamSourceConnector keeps them), for `datagen` and `file-source`: reading a field of one,
and Connect's checks of its `position`, in Connect's words (`FileStreamSourceConnector.alterOffsets`).
"""

from __future__ import annotations

from typing import TypeGuard

from reconciler.connectors.api import OffsetsRefused, SourceOffset


def is_long(value: object) -> TypeGuard[int]:
    """An integer, and not a bool (JSON's `true` is no position)."""
    return isinstance(value, int) and not isinstance(value, bool)


def position_of(offset: SourceOffset | None, field: str = "position") -> int:
    """The offset's `field`; 0 with no offset, or a value that is not an integer."""
    value = None if offset is None else offset.get(field)
    return value if is_long(value) else 0


def check_position(offset: SourceOffset) -> None:
    """Refuse an offset without a non-negative integer `position` (OffsetsRefused)."""
    if "position" not in offset:
        raise OffsetsRefused("Offset objects should either be null or contain the key 'position'")
    value = offset["position"]
    if not is_long(value):
        raise OffsetsRefused("The value for the 'position' key in the offset is expected to be a Long value")
    if value < 0:
        raise OffsetsRefused("The value for the 'position' key in the offset should be a non-negative value")
