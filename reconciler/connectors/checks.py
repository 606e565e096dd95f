"""A connector config checked against its plugin before deploy, as Connect checks a config in
`PUT /connector-plugins/{plugin}/config/validate` before accepting it.

Three sources of problems, each naming its key: the plugin's own `validate` (its declared
keys' values and its own rules), the keys Connect defines for every connector
(`reconciler.connectors.framework`: their values, a sink's `topics`/`topics.regex` rule, and
those the runtime would not apply, `reconciler.connectors.unapplied`), and
the keys themselves, when the plugin declares its keys: one of the other kind's (`topics` on a
source that does not declare it), or one that neither it nor Connect defines (with a
did-you-mean). A plugin that declares no keys may take any, as in Connect, where a source such
as MirrorSourceConnector defines `topics` itself; its type comes from its class, never from
its keys (docs/compatibility.md).
Client override keys (`producer.override.*`…) must be librdkafka settings or Java names
that map to one, with values librdkafka takes (`reconciler.kafka.io.client_names`).

`reconciler validate` (`manifests.plugin_checks`) and the REST API's `PUT …/config/validate`
(`api.plugin_catalog`) both judge a config by `judged_problems`: one verdict, wherever it is asked.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

from reconciler.connectors.api import Connector
from reconciler.connectors.configdef import ConfigProblem, ConnectorConfig
from reconciler.connectors.framework import ANY, framework_def, other_kind
from reconciler.connectors.unapplied import unapplied_problems
from reconciler.core.kinds import Kind
from reconciler.core.redact import PLACEHOLDER
from reconciler.kafka.io.client_names import OVERRIDE_PREFIXES, client_name_problem

# Where a problem about the connector as a whole is reported (the plugin's validate raised).
WHOLE_CONNECTOR = "connector.class"
BOOKKEEPING = frozenset({"name", "connector.class", "tasks.max"})
# The most tasks one connector may have on this runtime (docs/runtime.md#how-many-tasks). Each
# task is an entry of the connector's `batch/<name>` record, one Kafka record under the
# broker's default `message.max.bytes` (1 MiB): 50 to 85 bytes a task, so 100,000 tasks made a
# 5 MB record and MSG_SIZE_TOO_LARGE at every batch; 10,000 stay under 0.9 MB even with the
# largest counts (tests/unit/app/test_failed_runs.py). Measured on a 2-core machine, local Spark:
# a tick of a file-sink with 10,000 tasks (10,000 task configs, 10,001 statuses) took 12 s,
# with 1,000 tasks 6 s (tests/integration/runtime/test_tasks_max_limit.py). Java's limit is an int's.
MAX_TASKS = 10_000


def check_config(class_name: str, cls: type[Connector], config: ConnectorConfig) -> list[ConfigProblem]:
    """Every problem with `config` for plugin `cls` (named `class_name` in the manifest)."""
    own = _plugin_problems(cls, config)
    mentioned = {problem.key for problem in own}
    framework = [p for p in _framework_problems(cls, config) if p.key not in mentioned]
    return _key_problems(class_name, cls, config) + own + framework + tasks_max_problems(class_name, cls, config)


def tasks_max_problems(class_name: str, cls: type[Connector], config: ConnectorConfig) -> list[ConfigProblem]:
    """`tasks.max` above what the runtime serves (`MAX_TASKS`), or above the plugin's own limit
    for this config (`Connector.task_limit`): each names the limit."""
    text = (config.get("tasks.max") or "1").strip()
    if not (text.isascii() and text.isdigit()) or int(text) > 2**31 - 1:
        return []  # not an INT Java would parse: the models and Connect's own check report it
    tasks_max = int(text)
    if tasks_max > MAX_TASKS:
        return [ConfigProblem("tasks.max", f"the runtime serves at most {MAX_TASKS} tasks per connector; got {tasks_max}")]
    try:
        limit = cls().task_limit(config)
    except Exception:  # a plugin bug: its validate() reports what is wrong with the config
        return []
    if limit is not None and tasks_max > limit:
        return [ConfigProblem("tasks.max", f"{class_name} uses at most {limit} tasks with this config; got {tasks_max}")]
    return []


def judged_problems(class_name: str, cls: type[Connector], config: ConnectorConfig) -> list[ConfigProblem]:
    """`check_config`'s problems less those with a value holding a config provider's placeholder
    (`${file:…}`, `${vault:…}`): a Connect worker replaces it, so it cannot be judged here. An
    unknown key stays unknown whatever its value."""
    return [problem for problem in check_config(class_name, cls, config) if is_judged(problem, config)]


def is_judged(problem: ConfigProblem, config: ConnectorConfig) -> bool:
    """False for a problem with a value a Connect worker will still replace (unknown until then)."""
    value = config.get(problem.key)
    return problem.unknown or value is None or PLACEHOLDER.search(value) is None


def _plugin_problems(cls: type[Connector], config: ConnectorConfig) -> list[ConfigProblem]:
    try:
        return list(cls().validate(config))
    except Exception as exc:  # a plugin bug is reported, not raised: the other manifests still get checked
        return [ConfigProblem(WHOLE_CONNECTOR, f"the plugin's validate() raised {type(exc).__name__}: {exc}")]


def _framework_problems(cls: type[Connector], config: ConnectorConfig) -> list[ConfigProblem]:
    own_keys = cls.config_def.keys if cls.config_def is not None else {}
    # Connect's bookkeeping keys come from fields the manifest models have checked already.
    given = {key: value for key, value in config.items() if key not in BOOKKEEPING}
    problems = [p for p in framework_def(cls.kind).validate(given) if p.key not in own_keys]
    problems += unapplied_problems(given, own_keys, cls.converters)
    if cls.kind == Kind.SINK:
        problems += _sink_topics(config)
    else:
        problems += _topic_creation(config)
    return problems + _override_problems(config)


def _sink_topics(config: ConnectorConfig) -> list[ConfigProblem]:
    """Connect's `SinkConnectorConfig.validate`: exactly one of `topics` and `topics.regex`, and
    a dead letter queue topic that is not among the topics the sink consumes (its records would
    come back to it)."""
    topics = (config.get("topics") or "").strip()
    pattern = (config.get("topics.regex") or "").strip()
    dlq = (config.get("errors.deadletterqueue.topic.name") or "").strip()
    if topics and pattern:
        return [ConfigProblem("topics.regex", "cannot be set together with `topics`", "keep one of the two")]
    if not topics and not pattern:
        return [ConfigProblem("topics", "a sink connector must set `topics` or `topics.regex`")]
    if pattern:
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            return [ConfigProblem("topics.regex", f"is not a valid regular expression: {exc}")]
        if dlq and compiled.fullmatch(dlq):  # Java's Matcher.matches: the whole name
            return [ConfigProblem("topics.regex", f"matches the dead letter queue topic {dlq!r}: "
                                  "the sink would consume the records it sends there")]
    elif dlq and dlq in (topic.strip() for topic in topics.split(",")):
        return [ConfigProblem("topics", f"includes the dead letter queue topic {dlq!r}: "
                              "the sink would consume the records it sends there")]
    return []


def _topic_creation(config: ConnectorConfig) -> list[ConfigProblem]:
    """KIP-158 as the runtime supports it (`reconciler.kafka.io.topic_creation`): the default group,
    with both of its required keys; neither 0 partitions nor a replication factor of 0."""
    partitions, replication = (f"topic.creation.default.{k}" for k in ("partitions", "replication.factor"))
    problems = [
        ConfigProblem(key, "must be a positive number, or -1 for the broker's default")
        for key in (partitions, replication)
        if (config.get(key) or "").strip() == "0"
    ]
    if (config.get(partitions) is None) != (config.get(replication) is None):
        missing = partitions if config.get(partitions) is None else replication
        problems.append(ConfigProblem(missing, "is required with the other topic.creation.default setting"))
    if (config.get("topic.creation.groups") or "").strip():
        problems.append(ConfigProblem("topic.creation.groups", "is not supported: only the `default` group is",
                                      "set topic.creation.default.* for every topic the connector writes"))
    return problems


def _override_problems(config: ConnectorConfig) -> list[ConfigProblem]:
    problems = []
    for key in config:
        if not key.startswith(OVERRIDE_PREFIXES):
            continue
        prefix = next(p for p in OVERRIDE_PREFIXES if key.startswith(p))
        problem = client_name_problem(key[len(prefix) :], config.get(key))
        if problem is not None:
            problems.append(ConfigProblem(key, problem.message, problem.hint, unknown=problem.unknown_name))
    return problems


def _key_problems(class_name: str, cls: type[Connector], config: ConnectorConfig) -> list[ConfigProblem]:
    own, mine = cls.config_def, framework_def(cls.kind)
    problems = []
    for key in config:
        if (own is not None and own.knows(key)) or mine.knows(key):
            continue
        if own is None:
            continue  # a plugin that declares no keys may take any (MirrorSource takes `topics`)
        if ANY.knows(key):
            message = f"applies to {other_kind(cls.kind)} connectors only; `{class_name}` is a {cls.kind} connector"
            problems.append(ConfigProblem(key, message, unknown=True))
        else:
            problems.append(_unknown(class_name, key, [*own.keys, *mine.keys]))
    return problems


def _unknown(class_name: str, key: str, candidates: Iterable[str]) -> ConfigProblem:
    close = difflib.get_close_matches(key, list(candidates), n=1, cutoff=0.6)
    hint = f"did you mean `{close[0]}`?" if close else f"`reconciler plugins {class_name}` lists the keys it takes"
    return ConfigProblem(key, f"unknown key: neither `{class_name}` nor Kafka Connect defines it", hint, unknown=True)
