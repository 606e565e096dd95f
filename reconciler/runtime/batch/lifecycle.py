"""The worker's calls into connector plugins (on the driver): start, stop, and which to leave.

Connect's `WorkerConnector` start (load the class, validate the config, generate task configs)
and stop, and the framework's part of task configs (`Worker.connectorTaskConfigs`). Each call
catches whatever a plugin raises: a plugin bug fails its connector, never the worker. The
connector's placeholders are resolved at each start by the config providers (Java's
`WorkerConfigTransformer`), and the task configs keep them (`placeholders.reverse_transform`).
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from reconciler import masking
from reconciler.connectors.checks import tasks_max_problems
from reconciler.connectors.registry import load_connector, plugin_version, runs_on_connect_worker
from reconciler.core.kinds import Kind
from reconciler.core.live import LiveConnector, LiveState
from reconciler.core.placeholders import Resolution, Unresolved, reverse_transform
from reconciler.errors import ReconcilerError
from reconciler.kafka.io import config_providers
from reconciler.logs import connector_context
from reconciler.runtime.batch.statuses import Started, StartFailed, StartResult

if TYPE_CHECKING:
    from reconciler.connectors.api import Connector

LOG = logging.getLogger(__name__)

TASK_CLASS_CONFIG = "task.class"
SINK_TOPIC_KEYS = ("topics", "topics.regex")


def left_to_connect(connector: LiveConnector) -> bool:
    """A connector of a class our runtime does not run (a Java class): the Kafka Connect workers
    of the group start it, write its task configs and statuses and execute its restarts, so a
    tick leaves it alone entirely (docs/compatibility.md). A deleted one has no class any more:
    its statuses are cleaned up as for any deleted connector (Connect's leader does the same)."""
    config = connector.config
    return config is not None and runs_on_connect_worker(config.get("connector.class") or "")


def plugin_versions(live: LiveState) -> Callable[[str], str | None]:
    """Connector name → the version of its plugin (`registry.plugin_version`), which the
    statuses a tick writes carry as Java's do (None: no config, or no plugin loads)."""
    def version_of(name: str) -> str | None:
        connector = live.connector(name)
        config = None if connector is None else connector.config
        return None if config is None else plugin_version(config.get("connector.class") or "")

    return version_of


def start_connector(connector: LiveConnector) -> StartResult:
    """Load the class, validate the config, ask for task configs: what Connect's
    `WorkerConnector` start and `Herder.validateConnectorConfig` do. Never raises. What the
    plugin logs meanwhile is tagged `[name|worker]`, as Connect's `LoggingContext` tags it."""
    with connector_context(connector.name):
        raw = connector.config or {}
        resolution = resolve_remembered(raw)
        secrets = frozenset(resolution.secrets())
        if not resolution.complete:
            return StartFailed(unresolved_trace(resolution.unresolved), secrets)
        result = _start(raw, resolution)
        return replace(result, secrets=secrets | result.secrets) if isinstance(result, StartFailed) else result


def _start(raw: Mapping[str, str | None], resolution: Resolution) -> StartResult:
    props = resolution.config
    try:
        cls = load_connector(props.get("connector.class") or "")
        tasks_max = _tasks_max(props.get("tasks.max"))
        plugin = cls()
        # A `tasks.max` this runtime cannot serve (written by another tool) fails the connector,
        # naming the limit, before a batch could try (`checks.tasks_max_problems`, as validate says).
        problems = [*plugin.validate(props), *tasks_max_problems(props.get("connector.class") or "", cls, props)]
        if problems:
            lines = "\n".join(f"  {problem.render()}" for problem in problems)
            return StartFailed(f"the connector configuration is invalid:\n{lines}")
        configs = plugin.task_configs(props, tasks_max)
    except ReconcilerError as exc:
        return StartFailed(exc.render().removeprefix("error: "))
    except Exception:  # a plugin bug must fail this connector, not the worker
        return StartFailed(traceback.format_exc())
    if len(configs) > tasks_max:
        return StartFailed(f"the connector produced {len(configs)} task configs, more than tasks.max={tasks_max}")
    generated = [framework_task_config(c, cls, props) for c in configs]
    return _stored_and_run(cls.kind, raw, generated, resolution)


def _stored_and_run(
    kind: Kind, raw: Mapping[str, str | None], generated: list[dict[str, str]], resolution: Resolution
) -> StartResult:
    """Task configs as Connect stores them (placeholders put back, `reverse_transform`), and
    as its tasks start with them: the stored ones resolved again (`WorkerConfigTransformer`)."""
    stored = reverse_transform(raw, generated, resolution)
    run: list[dict[str, str]] = []
    secrets = set(resolution.secrets())
    for config in stored:
        task = resolve_remembered(config)
        if not task.complete:
            return StartFailed(unresolved_trace(task.unresolved))
        run.append({key: value for key, value in task.config.items() if value is not None})
        secrets |= task.secrets()
    return Started(kind=kind, task_configs=stored, run_configs=run, connector_config=resolution.config, secrets=frozenset(secrets))


def resolve_remembered(config: Mapping[str, str | None]) -> Resolution:
    """`config` resolved by the config providers (on the driver, at each start: a rotated secret
    is read at the next batch), the values they gave remembered for the process's scrubber."""
    resolution = config_providers.resolve(config)
    masking.remember(resolution.secrets())
    return resolution


def unresolved_trace(unresolved: Sequence[Unresolved]) -> str:
    """A FAILED trace for placeholders no provider resolved: provider and key, never a value."""
    lines = "\n".join(f"  {u.render()}" for u in unresolved)
    return f"a config placeholder could not be resolved (KIP-297 config providers: {', '.join(config_providers.NAMES)}):\n{lines}"


def framework_task_config(
    generated: Mapping[str, str], cls: type[Connector], connector_config: Mapping[str, str | None]
) -> dict[str, str]:
    """What Connect's `Worker.connectorTaskConfigs` stores for one generated task config: a
    copy, plus `task.class` (the task's class; ours are named `module:Class`) and the
    connector's `topics` / `topics.regex` when its config has them, whatever its type."""
    config = dict(generated)
    task_class = getattr(cls, "task_class", None)
    if task_class is not None:
        config[TASK_CLASS_CONFIG] = f"{task_class.__module__}:{task_class.__qualname__}"
    for key in SINK_TOPIC_KEYS:
        value = connector_config.get(key)
        if value is not None:
            config[key] = value
    return config


def stop_connector(connector: LiveConnector) -> str | None:
    """The plugin's `stop()` for a connector leaving RUNNING; its traceback when it raised.
    Never raises: Connect logs a failing stop(), and what it means for the connector's status
    is `statuses.after_stop` (a stopped or deleted connector reaches its state all the same,
    acceptance case A10, docs/state-machine.md#acceptance-cases; a paused one fails)."""
    raw = connector.config or {}
    resolution = resolve_remembered(raw)
    props = resolution.config if resolution.complete else raw  # a stop() gets what can be had
    try:
        with connector_context(connector.name):
            load_connector(props.get("connector.class") or "")().stop(props)
    except Exception:
        LOG.error("connector %s: stop() failed", connector.name, exc_info=True)
        return traceback.format_exc()
    return None


def _tasks_max(text: str | None) -> int:
    try:
        value = int((text or "1").strip())
    except ValueError:
        raise ReconcilerError(f"tasks.max must be an integer; got {text!r}") from None
    if value < 1:
        raise ReconcilerError(f"tasks.max must be at least 1; got {value}")
    return value
