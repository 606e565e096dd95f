"""Field-level config diff (kopf's DiffItem idea): a small pure function over plain data.

Both sides are Connect connector properties (string → string). The live side is normalised
first and values are compared the way Connect parses them (`core.normalize`), so a config that
a real worker wrote with the same values never shows a diff. Values are masked here, before
anything can display them: the plan never holds a secret in clear text.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from reconciler.core.normalize import Properties, normalise_live, same_value
from reconciler.core.plan import FieldChange, FieldOp
from reconciler.core.redact import MASK, is_sensitive, mask_credentials

def diff_config(desired: Properties, live: Properties, sensitive: Collection[str]) -> list[FieldChange]:
    """The fields that differ between `desired` and `live`, sorted by key, masked.

    `live` is normalised with the connector name found in `desired` (`name` is always set by
    `connector_properties`), so a hand-written record that omits `name`/`tasks.max` compares equal.
    """
    name = desired.get("name")
    live = normalise_live(name, live) if name is not None else dict(live)
    if desired == live:  # the common case at scale: skip the per-key walk
        return []
    changes: list[FieldChange] = []
    for key in sorted(desired.keys() | live.keys()):
        change = _diff_key(key, desired, live, sensitive)
        if change is not None:
            changes.append(change)
    return changes


def added_fields(props: Mapping[str, str | None], sensitive: Collection[str]) -> list[FieldChange]:
    """Every field as an `add` (a connector being created), sorted by key, masked."""
    return [_change(FieldOp.ADD, key, None, props[key], sensitive) for key in sorted(props)]


def removed_fields(props: Mapping[str, str | None], sensitive: Collection[str]) -> list[FieldChange]:
    """Every field as a `remove` (a connector being deleted), sorted by key, masked."""
    return [_change(FieldOp.REMOVE, key, props[key], None, sensitive) for key in sorted(props)]


def _diff_key(key: str, desired: Properties, live: Properties, sensitive: Collection[str]) -> FieldChange | None:
    if key not in live:
        return _change(FieldOp.ADD, key, None, desired[key], sensitive)
    if key not in desired:
        return _change(FieldOp.REMOVE, key, live[key], None, sensitive)
    if same_value(desired[key], live[key]):
        return None
    return _change(FieldOp.CHANGE, key, live[key], desired[key], sensitive)


def _change(op: FieldOp, key: str, old: str | None, new: str | None, sensitive: Collection[str]) -> FieldChange:
    if is_sensitive(key, old, sensitive) or is_sensitive(key, new, sensitive):
        return _masked(op, key, old, new)
    shown_old, shown_new = _shown(old), _shown(new)
    if op == FieldOp.CHANGE and shown_old == shown_new:
        return _masked(op, key, old, new)  # only a credential inside the value changed
    return FieldChange(op=op, key=key, old=shown_old, new=shown_new, sensitive=False)


def _masked(op: FieldOp, key: str, old: str | None, new: str | None) -> FieldChange:
    # A null stays null (it reveals nothing); any real value, old or new, becomes the mask.
    return FieldChange(
        op=op, key=key, old=None if old is None else MASK, new=None if new is None else MASK, sensitive=True
    )


def _shown(value: str | None) -> str | None:
    return None if value is None else mask_credentials(value)
