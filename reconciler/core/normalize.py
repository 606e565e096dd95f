"""Normalisation: turn a manifest into the exact properties Connect stores, and compare fairly.

Connect stores connector configs as string→string maps. A manifest may say `tasksMax: 2` or
`batch.size: 500`; a config written by a real worker says `"tasks.max":"2"`. Both sides are
normalised here so equal configs never show a diff (no perpetual plans).
"""

from __future__ import annotations

from reconciler.core.live import ConnectTargetState
from reconciler.core.models import ConfigValue, DesiredConnector, TargetState
from reconciler.core.redact import is_seal, seal_matches

Properties = dict[str, str | None]


def config_value(value: ConfigValue) -> str | None:
    """Connect's string form of a YAML scalar (Java's `String.valueOf`, booleans lower-case)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def connector_properties(desired: DesiredConnector) -> Properties:
    """The `connector-<name>` properties a Connect worker would store for this manifest."""
    spec = desired.spec
    props: Properties = {key: config_value(value) for key, value in spec.config.items()}
    props["connector.class"] = spec.connector_class
    props["tasks.max"] = str(spec.tasksMax)
    props["name"] = desired.name
    return props


def normalise_live(name: str, live: Properties) -> Properties:
    """Fill in what Connect implies but a hand-written record may omit (`name`, `tasks.max`)."""
    props = dict(live)
    props.setdefault("name", name)
    props.setdefault("tasks.max", "1")
    return props


def same_value(desired: str | None, live: str | None) -> bool:
    """Equal as Connect's ConfigDef parses them: values are trimmed before parsing.

    A live value sealed in a snapshot matches the desired value it was made from.
    Numbers are compared as text on purpose: "500" and "500.0" differ to Java (an INT config
    rejects the latter), so hiding that diff would hide a real change.
    """
    if desired is None or live is None:
        return desired is live
    if is_seal(live):  # a snapshot's sealed secret (core.redact): compared, never revealed
        return seal_matches(live, desired)
    return desired.strip() == live.strip()


def to_connect_state(state: TargetState) -> ConnectTargetState:
    return {
        TargetState.RUNNING: ConnectTargetState.STARTED,
        TargetState.PAUSED: ConnectTargetState.PAUSED,
        TargetState.STOPPED: ConnectTargetState.STOPPED,
    }[state]


def from_connect_state(state: ConnectTargetState) -> TargetState:
    return {
        ConnectTargetState.STARTED: TargetState.RUNNING,
        ConnectTargetState.PAUSED: TargetState.PAUSED,
        ConnectTargetState.STOPPED: TargetState.STOPPED,
    }[state]
