"""`/healthz` and `/readyz`: is the process alive, and is it doing its job.

Ready (200) means the process serves: the last reconcile succeeded and the broker answered the
probe recently; otherwise 503, and the body says which check failed and why. Invalid manifests
on disk (an edit that does not parse) are a condition, not a reason to leave a Kubernetes
Service: the last valid ones keep running, the status is `degraded` and the answer still 200,
exactly when someone needs the REST API to see what runs. `strict` (`/readyz?strict=true`)
answers 503 when degraded, for those who want a broken file to fail the probe.

Pure: a snapshot and the time in, a status code and a body out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from reconciler.api.state import ApiState

READY, DEGRADED, NOT_READY = "ready", "degraded", "not ready"


@dataclass(frozen=True)
class Check:
    ok: bool
    detail: str

    def doc(self) -> dict[str, Any]:
        return {"ok": self.ok, "detail": self.detail}


def reconcile_check(state: ApiState) -> Check:
    tick = state.last_tick
    if tick is None:
        return Check(False, "no reconcile has finished yet")
    if tick.outcome == "succeeded":
        return Check(True, f"the last reconcile succeeded in {tick.duration_s:.2f}s")
    what = "applying the manifests failed" if tick.outcome == "apply_failed" else "the last reconcile failed"
    return Check(False, f"{what}: {tick.error}")


def manifests_check(state: ApiState) -> Check:
    if state.manifests.valid:
        return Check(True, "the manifests are valid")
    count = len(state.manifests.problems)
    return Check(False, f"the manifests on disk are invalid ({count} problem(s)); the last valid ones keep running")


def broker_check(state: ApiState, now: float, stale_after_s: float) -> Check:
    broker = state.broker
    if broker.reachable is None:
        return Check(False, "the broker has not been probed yet")
    if not broker.reachable:
        return Check(False, f"the broker did not answer: {broker.error}")
    age = now - broker.checked_at
    if age > stale_after_s:
        return Check(False, f"the broker's last answer is {age:.0f}s old (the probe is stuck)")
    return Check(True, "the broker answered")


def readiness(state: ApiState, now: float, stale_after_s: float, *, strict: bool = False) -> tuple[int, dict[str, Any]]:
    """(HTTP status, body) of `/readyz`; `strict`: degraded is not ready either."""
    checks = {
        "reconcile": reconcile_check(state),
        "manifests": manifests_check(state),
        "broker": broker_check(state, now, stale_after_s),
    }
    if all(check.ok for check in checks.values()):
        status = READY
    elif checks["reconcile"].ok and checks["broker"].ok:
        status = DEGRADED
    else:
        status = NOT_READY
    body: dict[str, Any] = {"status": status, "checks": {name: check.doc() for name, check in checks.items()}}
    if state.manifests.problems:
        body["manifest_problems"] = list(state.manifests.problems)
    serves = status == READY or (status == DEGRADED and not strict)
    return (200 if serves else 503), body


def liveness(state: ApiState, now: float) -> dict[str, Any]:
    """`/healthz`: answering at all is the proof; the body says for how long."""
    return {"status": "alive", "uptime_s": round(now - state.started_at, 3), "worker_id": state.worker_id}
