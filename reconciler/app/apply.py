"""Apply: plan against the live state, write the plan's records in ONE Kafka transaction, then
run the plan's offsets requests. `reconciler apply`, every `run`/`watch` tick and `watch`'s
resync all apply through `apply`.

Order matters for safety with concurrent reconcilers on the same group:
1. check the broker and the internal topics;
2. claim the group's transactional id — this fences any other apply still in flight and
   aborts a crashed one's open transaction;
3. read live state, plan, write, commit.
A commit succeeds only if nobody claimed the id after step 2, so the state read in step 3 is
the state the records were planned against (an optimistic lock). A reconciler that lost the
race gets `Fenced` and exits 1 having committed nothing. A tick's apply keeps its claim from
the last tick (`apply_writer`); when that claim turns out fenced, it claims afresh and applies
once more, as a new `apply` would have.

Offsets actions write no records in that transaction: they are run afterwards by the offsets
executor (stop → snapshot → alter/reset → return, one step per transaction, `app.offsets`),
which alone records their ids as applied.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

from reconciler import failpoints
from reconciler.app.offsets import run_offsets_requests
from reconciler.core.diagnostics import Severity
from reconciler.core.live import LiveState
from reconciler.core.models import DesiredConnector
from reconciler.core.plan import Action, ActionKind, Plan, PlanOptions
from reconciler.core.planner import build_plan, with_fingerprints
from reconciler.errors import Fenced, ReconcilerError, StalePlan
from reconciler.failpoints import Failpoint
from reconciler.kafka.formats.changes import pending_offsets, plan_to_records
from reconciler.kafka.io.produce import KEPT_CLAIM_S, TransactionalWriter
from reconciler.kafka.io.store import LiveStore
from reconciler.kafka.settings import KafkaSettings
from reconciler.offsets.model import OffsetsOutcome
from reconciler.offsets.preview import with_current_offsets

LOG = logging.getLogger(__name__)
REPLAN_HINT = "run `reconciler plan … --out plan.json` again and review the new plan"
ShowPlan = Callable[[Plan], None]


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True, kw_only=True)
class ApplyOutcome:
    """What an apply did: the plan (as shown), the live state it was made from, the records
    written, its offsets actions, and what running them did (empty from `apply_manifests`,
    which only writes)."""

    plan: Plan
    live: LiveState
    records_written: int
    pending_offsets: list[Action]
    offsets: list[OffsetsOutcome] = field(default_factory=list)


def apply(
    settings: KafkaSettings,
    desired: Sequence[DesiredConnector],
    options: PlanOptions,
    *,
    store: LiveStore,
    saved: Plan | None = None,
    show_plan: ShowPlan = lambda plan: None,
    between_batches: bool = False,
    now_ms: Callable[[], int] = _now_ms,
    digests: bool = True,
    writer: TransactionalWriter | None = None,
) -> ApplyOutcome:
    """The manifests applied, then their offsets requests run (`app.offsets`), read with `store`
    (`LiveStore.one_shot` for a command; the runtime's, kept across ticks, for a tick) and
    written with `writer` (`apply_manifests`).

    The plan is shown (`show_plan`) before anything is written, with each offsets request's
    current offsets (from → to), and is the outcome's plan. `between_batches`: no task of this
    process's runtime can be running (a tick, before its batch), so every pending request runs
    in full; otherwise only the plan's, as far as is safe (`app.offsets.run_offsets_requests`).
    `digests=False` (a tick): the plan's digests are computed only when it writes something.
    """
    shown: list[Plan] = []

    def show(plan: Plan) -> None:  # (twice when a kept claim was fenced: the second plan is the one applied)
        shown.append(with_current_offsets(settings, plan, desired))
        show_plan(shown[-1])

    outcome = apply_manifests(
        settings, desired, options, store=store, saved=saved, show_plan=show, now_ms=now_ms, digests=digests,
        writer=writer,
    )
    offsets = run_offsets_requests(
        settings, desired, outcome.live, outcome.pending_offsets, between_batches=between_batches, now_ms=now_ms,
        store=store,
    )
    return dataclasses.replace(outcome, plan=shown[-1] if shown else outcome.plan, offsets=offsets)


def apply_manifests(
    settings: KafkaSettings,
    desired: Sequence[DesiredConnector],
    options: PlanOptions,
    *,
    store: LiveStore,
    saved: Plan | None = None,
    show_plan: ShowPlan = lambda plan: None,
    now_ms: Callable[[], int] = _now_ms,
    digests: bool = True,
    writer: TransactionalWriter | None = None,
) -> ApplyOutcome:
    """The transaction alone: bring the group's live state to `desired` (its offsets requests
    not run), read with `store`; `saved`: refuse unless it is still the plan. `digests=False`:
    the plan's digests (slow on purpose, `redact.slow_digest`) only when the plan has actions
    (a created connector's owner record names its plan); a tick with nothing to change skips them.
    `writer`: an `apply_writer` whose claim is kept across calls, else one of its own."""
    if saved is not None:
        refuse_other_group(saved, settings.group_id)  # before `prepare` creates that group's topics
    store.prepare()
    once = partial(_apply_claimed, settings, desired, options, store=store, saved=saved, show_plan=show_plan, now_ms=now_ms,
                   digests=digests)
    if writer is None:
        with apply_writer(settings) as own:
            return once(own)
    kept = writer.claimed
    try:
        return once(writer)
    except Fenced:
        writer.reset()
        if not kept:
            raise
        LOG.debug("the kept claim of %s was fenced since the last tick: claiming it again", writer.transactional_id)
        return once(writer)


def apply_writer(settings: KafkaSettings) -> TransactionalWriter:
    """The writer an apply claims the group's transactional id with (a tick keeps one)."""
    return TransactionalWriter(settings, after_produce=_crash_points())


def _apply_claimed(
    settings: KafkaSettings,
    desired: Sequence[DesiredConnector],
    options: PlanOptions,
    writer: TransactionalWriter,
    *,
    store: LiveStore,
    saved: Plan | None,
    show_plan: ShowPlan,
    now_ms: Callable[[], int],
    digests: bool,
) -> ApplyOutcome:
    writer.claim(max_age_s=KEPT_CLAIM_S)  # before reading: the commit proves the read current
    live = store.read(uncommitted=True).live
    plan = build_plan(desired, live, options, fingerprints=digests or saved is not None)
    if not digests and saved is None and plan.actions:
        plan = with_fingerprints(plan, desired, live)
    if saved is not None:
        refuse_stale(saved, current=plan, group_id=settings.group_id)
    refuse_errors(plan)
    show_plan(plan)
    by_name = {connector.name: connector for connector in desired}
    records = plan_to_records(plan, by_name, live, now_ms=now_ms())
    written = writer.write(records)
    return ApplyOutcome(plan=plan, live=live, records_written=written, pending_offsets=pending_offsets(plan))


def _crash_points() -> Callable[[TransactionalWriter, int], None] | None:
    return _crash_point if failpoints.any_armed() else None


def _crash_point(writer: TransactionalWriter, produced: int) -> None:
    """Failpoint `apply.after_record.<n>` (crash tests, `reconciler.failpoints`): the first n
    records reach the broker inside the open transaction, then the process is killed — what a
    Connect worker reading uncommitted records sees of an interrupted apply."""
    if failpoints.armed(Failpoint.APPLY_AFTER_RECORD, produced):
        writer.flush()
        failpoints.hit(Failpoint.APPLY_AFTER_RECORD, produced)


def refuse_other_group(saved: Plan, group_id: str) -> None:
    """A saved plan is applied to the group it was made for (a typo in `--group-id` would
    otherwise create that group's internal topics)."""
    if saved.group_id is not None and saved.group_id != group_id:
        raise StalePlan(
            f"the plan was made for group {saved.group_id}, not {group_id}",
            hint=f"pass --group-id {saved.group_id}, or {REPLAN_HINT}",
        )


def refuse_stale(saved: Plan, *, current: Plan, group_id: str) -> None:
    """Terraform's rule: a saved plan is applied only while it is still exactly the plan."""
    refuse_other_group(saved, group_id)
    if saved.desired_fingerprint != current.desired_fingerprint:
        raise StalePlan("the manifests changed since the plan was made; run `reconciler plan` again", hint=REPLAN_HINT)
    if saved.live_fingerprint != current.live_fingerprint:
        raise StalePlan("live state moved since the plan was made; run `reconciler plan` again", hint=REPLAN_HINT)
    if _topics_resets(saved) != _topics_resets(current):
        # Active topics are left out of the live fingerprint (tasks record them as they run);
        # a reset forgets the ones its plan lists, so those must not have moved either.
        raise StalePlan("active topics moved since the plan was made; run `reconciler plan` again", hint=REPLAN_HINT)


def _topics_resets(plan: Plan) -> list[Action]:
    return [action for action in plan.actions if action.kind is ActionKind.TOPICS_RESET]


def refuse_errors(plan: Plan) -> None:
    errors = [d for d in plan.diagnostics if d.severity is Severity.ERROR]
    if errors:
        lines = "\n".join(d.render() for d in errors)
        raise ReconcilerError(f"the plan has {len(errors)} error(s); nothing was applied:\n{lines}")
