"""Plan: the manifests paired with the live state and diffed, as one plan value. Nothing is written.

`reconciler plan` and `reconciler drift` plan through `make_plan`; `apply` plans inside its
transaction instead (`app.apply`), against the state read there. The live state comes from a
snapshot file (CI that cannot reach the cluster), from a Kafka group (read-only: a missing group
is an error, nothing is created, unless `new_group` says it may not exist yet), or from nothing
(everything would be created). Against Kafka,
offsets requests show their current offsets (from → to). Rendering the value (text, Markdown,
JSON) is `reconciler.render`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from reconciler import masking
from reconciler.core.live import LiveState, load_snapshot
from reconciler.core.models import DesiredConnector
from reconciler.core.plan import Plan, PlanOptions
from reconciler.core.planner import build_plan
from reconciler.errors import ReconcilerError
from reconciler.kafka.io.admin import group_is_new
from reconciler.kafka.io.store import read_live_state
from reconciler.kafka.settings import KafkaSettings
from reconciler.offsets.preview import with_current_offsets

SNAPSHOT_HINT = "write one with `reconciler snapshot > live.json`"


@dataclass(frozen=True)
class LiveSource:
    """Where a plan's live state comes from: a snapshot file, else a Kafka group, else nothing."""

    snapshot: Path | None = None
    kafka: KafkaSettings | None = None
    # `plan --new-group`: a Kafka group none of whose topics exist yet is planned against an
    # empty state (`for_new_group`), not refused as a probable typo.
    new_group: bool = False


def for_new_group(source: LiveSource) -> tuple[LiveSource, str | None]:
    """The source to plan against, and what to tell the user when it is not the one asked for:
    with `new_group`, a Kafka group that has none of its topics yet is an empty state. Without
    it, such a group stays an error when it is read (a typo'd `--group-id`, most likely)."""
    if not source.new_group or source.kafka is None or source.snapshot is not None:
        return source, None
    settings = source.kafka
    if not group_is_new(settings):
        return source, None
    note = (
        f"group {settings.group_id} has no internal topics at {settings.bootstrap_servers} yet (--new-group): "
        "planned against an empty state; `apply`, `run` or `watch` create its topics"
    )
    return LiveSource(), note


def make_plan(
    desired: Sequence[DesiredConnector],
    source: LiveSource,
    options: PlanOptions,
    *,
    fingerprints: bool = True,
    current_offsets: bool = True,
) -> Plan:
    """The plan that would bring the live state to `desired` (`core.planner.build_plan`); with
    `current_offsets`, read from Kafka, its offsets requests show the offsets they start from."""
    live = read_live(source)
    plan = build_plan(desired, live, options, fingerprints=fingerprints)
    if current_offsets and source.snapshot is None and source.kafka is not None:
        plan = with_current_offsets(source.kafka, plan, desired)
    return plan


def read_live(source: LiveSource) -> LiveState:
    """The snapshot file's state, else the Kafka group's (what a Connect worker reading
    uncommitted records holds too, as planning needs), else an empty state."""
    if source.snapshot is not None:
        return load_live_state_file(source.snapshot)
    if source.kafka is not None:
        return _read_from_kafka(source.kafka)
    return LiveState()


def load_live_state_file(path: Path) -> LiveState:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ReconcilerError(f"cannot read live-state file {path}: {exc.strerror}", hint=SNAPSHOT_HINT) from exc
    try:
        live = load_snapshot(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(document)"
        raise ReconcilerError(
            f"{path}: not a valid live-state snapshot: {where}: {first['msg']}", hint=SNAPSHOT_HINT
        ) from exc
    masking.remember_live(live)  # a snapshot from before secrets were sealed holds them in clear
    return live


def _read_from_kafka(settings: KafkaSettings) -> LiveState:
    try:
        return read_live_state(settings, uncommitted=True)
    except ImportError as exc:  # the Kafka client (confluent_kafka) loads on the first read
        raise ReconcilerError(
            f"reading live state from Kafka is unavailable: {exc}",
            hint="plan against a snapshot file with --live-state FILE",
        ) from exc
