"""The bodies of Kafka Connect's REST API, built from the live state (no I/O).

`reconciler status` prints them and the read-only REST API (`reconciler.api`) serves them, so
scripts and clients written against a Connect cluster keep working (docs/compatibility.md#rest-shapes).
Each function names the Java method whose answer it reproduces (Kafka 4.3.1's `AbstractHerder`,
`DistributedHerder`, `ConnectorsResource`); a None result is where Java answers 404, with the
message the matching `*_message` function gives.

Every config shown goes through `shown_config`, the one place secrets are masked.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from datetime import datetime, timezone
from typing import Any

from reconciler.connectors.registry import connector_kind, is_java_class_name, plugin_kind
from reconciler.core.live import (
    UNDEFINED_VERSION,
    AutoRestartStatus,
    InstanceState,
    InstanceStatus,
    LiveConnector,
    LiveState,
)
from reconciler.core.redact import mask_config

Body = dict[str, Any]
EXPANSIONS = ("status", "info")


def shown_config(config: Mapping[str, str | None], sensitive: Collection[str] = ()) -> dict[str, str | None]:
    """A connector or task config as it may be shown: secrets masked (docs/product-rules.md#secrets)."""
    return mask_config(dict(config), sensitive)


# --- messages of Java's NotFoundException, answered as 404 ---------------------------------------


def connector_not_found_message(name: str) -> str:
    return f"Connector {name} not found"


def no_status_message(name: str) -> str:
    return f"No status found for connector {name}"


def no_task_status_message(name: str, task: int) -> str:
    return f"No status found for task {name}-{task}"  # ConnectorTaskId.toString()


# --- bodies ----------------------------------------------------------------------------------------


def connector_type(connector: LiveConnector) -> str:
    """`source` or `sink` by the connector's class, as Connect's REST says (`core.kinds`); a
    class that is neither a plugin here nor a Java class name has no type: `unknown`, as
    Connect reports a connector whose plugin it lacks."""
    config = connector.config
    if config is None:
        return "unknown"
    class_name = config.get("connector.class") or ""
    if plugin_kind(class_name) is None and not is_java_class_name(class_name):
        return "unknown"
    return connector_kind(class_name, config)


def connector_names(live: LiveState) -> list[str]:
    """`GET /connectors`: connectors with a config (Java's order is its HashMap's; ours sorted)."""
    return [name for name, connector in sorted(live.connectors.items()) if connector.exists]


def state_doc(status: InstanceStatus, task_id: int | None = None) -> Body:
    """`ConnectorStateInfo.ConnectorState` / `TaskState`: `trace` only when not empty; `version`
    (null when the record had none) unless it is "undefined" (`PluginInfo.NoVersionFilter`)."""
    doc: Body = {} if task_id is None else {"id": task_id}
    doc["state"] = status.state.value
    doc["worker_id"] = status.worker_id
    if status.trace:  # Connect omits a null or empty trace
        doc["trace"] = status.trace
    if status.version != UNDEFINED_VERSION:
        doc["version"] = status.version
    return doc


def connector_status(connector: LiveConnector) -> Body | None:
    """`AbstractHerder.connectorStatus`: tasks sorted by id; None when it has no status."""
    if connector.connector_status is None:
        return None
    return _status_body(connector, connector.connector_status)


def _status_body(connector: LiveConnector, status: InstanceStatus) -> Body:
    return {
        "name": connector.name,
        "connector": state_doc(status),
        "tasks": [state_doc(task_status, task) for task, task_status in sorted(connector.task_statuses.items())],
        "type": connector_type(connector),
    }


def task_status(connector: LiveConnector | None, task: int) -> Body | None:
    """`AbstractHerder.taskStatus`: the status alone decides (the connector may be deleted)."""
    status = None if connector is None else connector.task_statuses.get(task)
    return None if status is None else state_doc(status, task)


def task_ids(connector: LiveConnector) -> list[int]:
    """`ClusterConfigState.tasks`: none while inconsistent, else 0 … the committed count - 1."""
    if connector.inconsistent or connector.task_count is None:
        return []
    return list(range(connector.task_count))


def connector_info(connector: LiveConnector, sensitive: Collection[str] = ()) -> Body | None:
    """`AbstractHerder.connectorInfo` (`GET /connectors/{name}`); None for a deleted connector."""
    if connector.config is None:
        return None
    return {
        "name": connector.name,
        "config": shown_config(connector.config, sensitive),
        "tasks": [{"connector": connector.name, "task": task} for task in task_ids(connector)],
        "type": connector_type(connector),
    }


def task_infos(connector: LiveConnector, sensitive: Collection[str] = ()) -> list[Body] | None:
    """`DistributedHerder.taskConfigs`: each committed task's raw config."""
    if connector.config is None:
        return None
    configs = connector.task_configs
    return [
        {"id": {"connector": connector.name, "task": task}, "config": shown_config(configs[task], sensitive)}
        for task in task_ids(connector)
        if task < len(configs)
    ]


def active_topics(live: LiveState, name: str) -> Body:
    """`GET /connectors/{name}/topics` (KIP-558): Java answers for any name, known or not."""
    return {name: {"topics": list(live.active_topics.get(name, []))}}


def expanded(
    live: LiveState, expansions: Iterable[str], sensitive: Mapping[str, Collection[str]] | None = None
) -> Body:
    """`GET /connectors?expand=…`: per existing connector, each known expansion asked for.

    As in Java, a connector whose status is missing is left out when `status` is asked for
    (its NotFoundException skips it), and unknown expansions are ignored."""
    wanted = [e for e in EXPANSIONS if e in set(expansions)]
    out: Body = {}
    for name in connector_names(live):
        connector = live.connectors[name]
        doc: Body = {}
        if "status" in wanted:
            status = connector_status(connector)
            if status is None:
                continue
            doc["status"] = with_our_fields(status, live)
        if "info" in wanted:
            doc["info"] = connector_info(connector, (sensitive or {}).get(name, ()))
        out[name] = doc
    return out


# --- ours: not Connect's ---------------------------------------------------------------------------


def shown_status(connector: LiveConnector) -> Body | None:
    """`reconciler status --format json`'s document: `connector_status`, or for a connector with
    a config and no status record yet (applied, not yet run by any worker) the same shape with
    the connector UNASSIGNED — Connect's state for "not yet assigned to a worker" — and
    `worker_id` null, which no worker writes (docs/compatibility.md#rest-shapes). Java's
    REST answers 404 there instead; here that wait lasts until the next `reconciler run` tick,
    and the table shows the connector ("no status yet"). None: neither config nor status."""
    status = connector_status(connector)
    if status is not None or not connector.exists:
        return status
    return _status_body(connector, InstanceStatus(state=InstanceState.UNASSIGNED, worker_id=None))


def auto_restart_doc(status: AutoRestartStatus) -> Body:
    """Strimzi's `AutoRestartStatus` fields, plus when the next attempt may be (null: none,
    `maxRestarts` reached)."""
    upcoming = status.next_restart_ms
    return {
        "count": status.count,
        "lastRestartTimestamp": iso_utc(status.last_restart_ms),
        "nextRestartTimestamp": None if upcoming is None else iso_utc(upcoming),
    }


def iso_utc(ms: int) -> str:
    """Strimzi's timestamp format, `yyyy-MM-ddTHH:mm:ssZ` in UTC."""
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def with_our_fields(doc: Body, live: LiveState) -> Body:
    """`doc` (a status document) with what the runtime adds, each only when the connector has
    it, so that otherwise it keeps exactly Connect's shape: its `spec.autoRestart` history
    (docs/runtime.md#auto-restart), and why its tasks wait (`waiting`,
    docs/runtime.md#liveness-between-batches)."""
    history = live.auto_restarts.get(doc["name"])
    if history is not None:
        doc["autoRestart"] = auto_restart_doc(history)
    waiting = live.waiting.get(doc["name"])
    if waiting is not None:
        doc["waiting"] = {"since": iso_utc(waiting.since_ms), "workerId": waiting.worker_id, "reason": waiting.reason}
    return doc


def last_batch(live: LiveState, name: str) -> Body | None:
    """`GET /connectors/{name}/batch`, a route of ours: when the runtime last ran the connector's
    tasks and how that went (docs/runtime.md#liveness-between-batches); None when it never did."""
    batch = live.last_batches.get(name)
    if batch is None:
        return None
    return {
        "name": name,
        "finished_at_ms": batch.finished_at_ms,
        "outcome": batch.outcome,
        "records": batch.records,
        "worker_id": batch.worker_id,
        "tasks": [
            {"id": task, "records": t.records, "bytes": t.bytes, "failed": t.failed}
            for task, t in sorted(batch.tasks.items())
        ],
    }
