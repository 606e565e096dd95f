"""Strimzi `KafkaConnector` resources read as connectors, so a Strimzi user's directory plans as is.

`apiVersion: kafka.strimzi.io/v1beta2` or `kafka.strimzi.io/v1`, `kind: KafkaConnector`, with the
fields of Strimzi's `KafkaConnectorSpec`: `metadata.name` (and `labels`), `spec.class`,
`spec.tasksMax`, `spec.config`, `spec.state`, the deprecated `spec.pause` (v1beta2 only; `state`
wins over it, as in Strimzi), `spec.autoRestart`; and the `strimzi.io/restart` and
`strimzi.io/restart-task` annotations as one-shot restart requests whose id is the annotation and
its value, so each value runs once per connector (docs/product-rules.md#strimzi-kafkaconnector).
`translate` gives the equivalent `reconciler.io/v1` document, which every other check then sees;
its findings point into the resource as written. What Strimzi has and we cannot do
(`spec.version`, `spec.listOffsets`/`alterOffsets`, the `connector-offsets` and
`pause-reconciliation` annotations) is an error there, never silently dropped. Other Strimzi
kinds (`KafkaConnect`, `KafkaTopic`…) in the same directory are skipped (`other_kind`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from reconciler.core.models import API_VERSION, KIND_CONNECTOR
from reconciler.manifests.findings import Finding, Path

GROUP = "kafka.strimzi.io/"
VERSIONS = ("kafka.strimzi.io/v1", "kafka.strimzi.io/v1beta2")
KIND = "KafkaConnector"
# Strimzi's other custom resources: what a Strimzi user's directory holds besides connectors.
OTHER_KINDS = frozenset(
    ("Kafka", "KafkaConnect", "KafkaTopic", "KafkaUser", "KafkaMirrorMaker", "KafkaMirrorMaker2", "KafkaBridge",
     "KafkaNodePool", "KafkaRebalance", "StrimziPodSet")
)
RESTART = "strimzi.io/restart"
RESTART_TASK = "strimzi.io/restart-task"
_ANNOTATIONS: Path = ("metadata", "annotations")
# Strimzi's restart arguments (KafkaConnectAssemblyOperator.restartAnnotationIsValid).
_INCLUDE_TASKS, _ONLY_FAILED = "includetasks", "onlyfailed"

_SPEC_FIELDS = ("class", "tasksMax", "config", "state", "autoRestart")
_REFUSED_SPEC: dict[str, tuple[str, str]] = {
    "version": (
        "`spec.version` (Connect's connector.plugin.version) is not supported: the reconciler runs the one "
        "version of each plugin it has",
        "remove it; the connector runs the plugin installed where the reconciler runs",
    ),
    "listOffsets": (
        "`spec.listOffsets` is not supported: it writes a Kubernetes ConfigMap, which the reconciler does not reach",
        "remove it; `reconciler offsets NAME` lists the connector's offsets",
    ),
    "alterOffsets": (
        "`spec.alterOffsets` is not supported: it reads a Kubernetes ConfigMap, which the reconciler does not reach",
        "remove it; declare the change as `spec.offsets` of a `reconciler.io/v1` Connector manifest "
        "(docs/product-rules.md#one-shot-requests)",
    ),
}
_REFUSED_ANNOTATIONS: dict[str, tuple[str, str]] = {
    "strimzi.io/connector-offsets": (
        "the `strimzi.io/connector-offsets` annotation is not supported: it acts on Kubernetes ConfigMaps",
        "remove it; `reconciler offsets NAME` lists offsets, and a `reconciler.io/v1` manifest's `spec.offsets` "
        "alters or resets them",
    ),
    "strimzi.io/pause-reconciliation": (
        "the `strimzi.io/pause-reconciliation` annotation is not supported: the reconciler would still "
        "reconcile this connector",
        "remove the annotation, or move the resource out of the manifest directories",
    ),
}


@dataclass(kw_only=True)
class Translation:
    """The `reconciler.io/v1` document, what is wrong (`errors`) or doubtful (`warnings`) in
    the resource, and where the parts we made up come from (`moved`: our path → its path)."""

    data: dict[str, Any]
    errors: list[Finding] = field(default_factory=list)
    warnings: list[Finding] = field(default_factory=list)
    moved: dict[Path, Path] = field(default_factory=dict)

    def locate(self, finding: Finding) -> Finding:
        """`finding` (about our document) at the place in the resource it comes from."""
        for ours, theirs in self.moved.items():
            if finding.path[: len(ours)] == ours:
                return finding._replace(path=theirs)
        return finding


def is_strimzi(data: object) -> bool:
    """A `kafka.strimzi.io` resource of the kind we read (any version: a wrong one gets its error)."""
    return isinstance(data, dict) and _api_version(data).startswith(GROUP) and data.get("kind") == KIND


def other_kind(data: object) -> str | None:
    """The kind of a Strimzi resource that is not a connector (`KafkaConnect`…), to be skipped."""
    if not isinstance(data, dict) or not _api_version(data).startswith(GROUP):
        return None
    kind = data.get("kind")
    return kind if isinstance(kind, str) and kind in OTHER_KINDS else None


def translate(data: Mapping[str, Any]) -> Translation:
    """The connector a `KafkaConnector` resource declares, as our manifest format says it."""
    version = _api_version(data)
    metadata = data.get("metadata")
    spec = data.get("spec")
    ours: dict[str, Any] = {key: value for key, value in data.items() if key not in ("apiVersion", "kind", "status")}
    ours.update(apiVersion=API_VERSION, kind=KIND_CONNECTOR)
    out = Translation(data=ours)
    if version not in VERSIONS:
        out.errors.append(Finding(("apiVersion",), f"`{version}` is not a KafkaConnector version the reconciler reads",
                                  f"use `{VERSIONS[0]}` (or the deprecated `{VERSIONS[1]}`)"))
    if isinstance(metadata, Mapping):
        ours["metadata"] = {key: metadata[key] for key in ("name", "labels") if key in metadata}
    if isinstance(spec, Mapping):
        ours["spec"] = _spec(spec, version, out)
        restart = _restart(metadata if isinstance(metadata, Mapping) else {}, spec.get("tasksMax"), out)
        if restart is not None:
            ours["spec"]["restart"] = restart
            out.moved[("spec", "restart")] = _ANNOTATIONS
    return out


def _spec(spec: Mapping[str, Any], version: str, out: Translation) -> dict[str, Any]:
    ours = {key: value for key, value in spec.items() if key in _SPEC_FIELDS}
    allowed = [*_SPEC_FIELDS, *(["pause"] if version != VERSIONS[0] else [])]
    for key in spec:
        if key in _REFUSED_SPEC:
            message, hint = _REFUSED_SPEC[key]
            out.errors.append(Finding(("spec", key), message, hint, "key"))
        elif key == "pause":
            _pause(spec, version, ours, out)
        elif key not in _SPEC_FIELDS:
            out.errors.append(Finding(("spec", key), f"`{key}` is not a field of Strimzi's KafkaConnector spec",
                                      f"fields: {', '.join(sorted(allowed))}", "key"))
    return ours


def _pause(spec: Mapping[str, Any], version: str, ours: dict[str, Any], out: Translation) -> None:
    """v1beta2's deprecated `pause: true|false`: `state` wins when both are set (as in Strimzi)."""
    pause = spec["pause"]
    if version == VERSIONS[0]:
        out.errors.append(Finding(("spec", "pause"), f"`spec.pause` is not part of {VERSIONS[0]}",
                                  "write `state: paused` (or `running`)", "key"))
    elif not isinstance(pause, bool):
        out.errors.append(Finding(("spec", "pause"), "`spec.pause` must be true or false"))
    elif "state" in spec:
        if (spec["state"] == "paused") != pause:
            out.warnings.append(Finding(("spec", "pause"), "`spec.pause` and `spec.state` are both set: "
                                        "`state` wins, as in Strimzi", "remove the deprecated `pause`", "key"))
    else:
        ours["state"] = "paused" if pause else "running"
        out.moved[("spec", "state")] = ("spec", "pause")


def _restart(metadata: Mapping[str, Any], tasks_max: object, out: Translation) -> dict[str, Any] | None:
    """The restart request the annotations make, if any (Strimzi's rules for their values)."""
    annotations = metadata.get("annotations")
    if not isinstance(annotations, Mapping):
        return None
    for key, (message, hint) in _REFUSED_ANNOTATIONS.items():
        if key in annotations and str(annotations[key]).strip().lower() not in ("", "false"):
            out.errors.append(Finding((*_ANNOTATIONS, key), message, hint, "key"))
    ids: list[str] = []
    include_tasks = only_failed = False
    if RESTART in annotations:
        flags = _restart_flags(annotations[RESTART], out)
        if flags is not None:
            ids.append(f"{RESTART}={_text(annotations[RESTART])}")
            include_tasks, only_failed = flags
    if RESTART_TASK in annotations and _restart_task(annotations[RESTART_TASK], tasks_max, out):
        # Connect's config topic holds no single-task restart: the nearest request that surely
        # restarts the task restarts the connector and every task.
        ids.append(f"{RESTART_TASK}={_text(annotations[RESTART_TASK])}")
        include_tasks, only_failed = True, False
    if not ids:
        return None
    return {"id": "+".join(ids), "includeTasks": include_tasks, "onlyFailed": only_failed}


def _restart_flags(value: object, out: Translation) -> tuple[bool, bool] | None:
    """(includeTasks, onlyFailed) of a `strimzi.io/restart` value; None when it asks for no restart."""
    where = (*_ANNOTATIONS, RESTART)
    if not isinstance(value, str):
        out.errors.append(Finding(where, "annotation values are strings", 'quote it: `strimzi.io/restart: "true"`'))
        return None
    if not value.strip() or "false" in value.lower():  # Strimzi: no restart asked
        return None
    words = [word.strip().lower() for word in value.split(",")]
    if words == ["true"]:
        return False, False
    if not words or not set(words) <= {_INCLUDE_TASKS, _ONLY_FAILED}:
        out.errors.append(Finding(where, f"`{RESTART}` must be `true`, or `includeTasks`, `onlyFailed` or both, "
                                  "comma-separated", 'e.g. `strimzi.io/restart: "includeTasks,onlyFailed"`'))
        return None
    return _INCLUDE_TASKS in words, _ONLY_FAILED in words


def _restart_task(value: object, tasks_max: object, out: Translation) -> bool:
    """Whether a `strimzi.io/restart-task` value names a task that can exist."""
    where = (*_ANNOTATIONS, RESTART_TASK)
    text = value.strip() if isinstance(value, str) else None
    if text is None or not text.isascii() or not text.isdigit():
        out.errors.append(Finding(where, f"`{RESTART_TASK}` must be a task id (a quoted number)",
                                  'e.g. `strimzi.io/restart-task: "0"`'))
        return False
    limit = tasks_max if isinstance(tasks_max, int) and not isinstance(tasks_max, bool) else 1
    if int(text) >= limit:
        out.errors.append(Finding(where, f"task {int(text)} does not exist: the connector has at most {limit} task(s)",
                                  f"task ids run from 0 to {limit - 1}"))
        return False
    return True


def _text(value: object) -> str:
    """An annotation's value as a request id: no spaces (ids are one word)."""
    return "".join(str(value).split())


def _api_version(data: Mapping[str, Any]) -> str:
    version = data.get("apiVersion")
    return version if isinstance(version, str) else ""
