"""Apply: read live state, plan, and write the plan's records in ONE Kafka transaction.

Order matters for safety with concurrent reconcilers on the same group:
1. check the broker and the internal topics;
2. claim the group's transactional id — this fences any other apply still in flight and
   aborts a crashed one's open transaction;
3. read live state, plan, write, commit.
A commit succeeds only if nobody claimed the id after step 2, so the state read in step 3 is
the state the records were planned against (an optimistic lock). A reconciler that lost the
race gets `Fenced` and exits 1 having committed nothing.

Offsets actions write no records here: they are returned in `ApplyOutcome.pending_offsets`
for `reconciler.offsets.executor` (stop → snapshot → alter/reset → return, one step per
transaction), which alone records their ids as applied.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from reconciler.core.diagnostics import Severity
from reconciler.core.live import LiveState
from reconciler.core.models import DesiredConnector
from reconciler.core.plan import Action, Plan
from reconciler.core.planner import build_plan
from reconciler.errors import ReconcilerError, StalePlan
from reconciler.kafka.changes import pending_offsets, plan_to_records
from reconciler.kafka.produce import TransactionalWriter
from reconciler.kafka.store import LiveStore, prepare, read_view
from reconciler.kafka.settings import KafkaSettings

REPLAN_HINT = "run `reconciler plan … --out plan.json` again and review the new plan"


@dataclass(frozen=True)
class ApplyOutcome:
    plan: Plan
    live: LiveState
    records_written: int
    pending_offsets: list[Action]


def apply_manifests(
    settings: KafkaSettings,
    desired: Sequence[DesiredConnector],
    *,
    prune: bool = False,
    allow_empty: bool = False,
    manifest_paths: Sequence[str] = (),
    saved: Plan | None = None,
    show_plan: Callable[[Plan], None] = lambda plan: None,
    now_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
    store: LiveStore | None = None,
) -> ApplyOutcome:
    """Bring the group's live state to `desired`; `saved`: refuse unless it is still the plan.
    `store`: read with it (the runtime's, kept across ticks; its topics prepared)."""
    if store is None:
        prepare(settings)
    with TransactionalWriter(settings, after_produce=_crash_points()) as writer:
        writer.claim()
        if store is not None:
            live = store.read(uncommitted=True).live
        else:
            live = read_view(settings, uncommitted=True, topics="prepared").live
        plan = build_plan(desired, live, prune=prune, allow_empty=allow_empty, manifest_paths=list(manifest_paths))
        if saved is not None:
            refuse_stale(saved, plan, settings.group_id)
        refuse_errors(plan)
        show_plan(plan)
        by_name = {connector.name: connector for connector in desired}
        records = plan_to_records(plan, by_name, live, now_ms=now_ms())
        written = writer.write(records)
    return ApplyOutcome(plan=plan, live=live, records_written=written, pending_offsets=pending_offsets(plan))


APPLY_AFTER_RECORD = "apply.after_record."


def _crash_points() -> Callable[[TransactionalWriter, int], None] | None:
    from reconciler.runtime import failpoints

    return _crash_point if os.environ.get(failpoints.ENV_POINTS) else None


def _crash_point(writer: TransactionalWriter, produced: int) -> None:
    """Failpoint `apply.after_record.<n>` (crash tests, `reconciler.runtime.failpoints`): the
    first n records reach the broker inside the open transaction, then the process is killed —
    what a Connect worker reading uncommitted records sees of an interrupted apply."""
    from reconciler.runtime import failpoints

    name = f"{APPLY_AFTER_RECORD}{produced}"
    if failpoints.armed(name):
        writer.flush()
        failpoints.hit(name)


def refuse_stale(saved: Plan, current: Plan, group_id: str) -> None:
    """Terraform's rule: a saved plan is applied only while it is still exactly the plan."""
    if saved.group_id is not None and saved.group_id != group_id:
        raise StalePlan(
            f"the plan was made for group {saved.group_id}, not {group_id}",
            hint=f"pass --group-id {saved.group_id}, or {REPLAN_HINT}",
        )
    if saved.desired_fingerprint != current.desired_fingerprint:
        raise StalePlan("the manifests changed since the plan was made; run `reconciler plan` again", hint=REPLAN_HINT)
    if saved.live_fingerprint != current.live_fingerprint:
        raise StalePlan("live state moved since the plan was made; run `reconciler plan` again", hint=REPLAN_HINT)


def refuse_errors(plan: Plan) -> None:
    errors = [d for d in plan.diagnostics if d.severity is Severity.ERROR]
    if errors:
        lines = "\n".join(d.render() for d in errors)
        raise ReconcilerError(f"the plan has {len(errors)} error(s); nothing was applied:\n{lines}")

