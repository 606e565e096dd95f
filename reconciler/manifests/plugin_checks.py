"""Each manifest's config checked against its connector plugin, before anything is deployed.

Runs wherever `spec.class` is a string and `spec.config` a mapping (also in a document the
models refuse for another part: `validate`), on the config exactly as a Connect worker would
store it (`core.normalize`). The plugin is found as the runtime finds it (registry: entry
point or `module:Class`) and its problems become findings at `spec.config.<key>` (at the key
itself when the key is the problem). A Java class name is left alone: a Java Connect worker
sharing the topics runs it, and there is no plugin here to check it with (`java_note` says so).

A value still holding a config provider's placeholder (`${file:…}`, `${vault:…}`: a Connect
worker resolves those) cannot be judged here, so problems with that value are dropped (not
with its key: an unknown key stays unknown whatever its value).

An alter offsets request is then put to the plugin's `validate_offsets` hook (KIP-875's
`alterOffsets` checks, docs/plugins.md#offsets-requests): each refused entry becomes a finding
at `spec.offsets.offsets[i]`, so a request the connector's tasks would silently ignore is never
written.
"""

from __future__ import annotations

from reconciler.connectors.api import Connector, InvalidConnectorConfig
from reconciler.connectors.checks import WHOLE_CONNECTOR, judged_problems
from reconciler.connectors.configdef import ConfigProblem
from reconciler.connectors.offsets_check import refusals
from reconciler.connectors.registry import UnknownConnector, is_java_class_name, load_connector, python_spelling
from reconciler.core import diagnostics
from reconciler.core.diagnostics import Diagnostic
from reconciler.core.models import ConnectorManifest, DesiredConnector, OffsetEntry, OffsetsAction, SourceRef
from reconciler.core.normalize import Properties, connector_properties
from reconciler.manifests.findings import Finding, Path

# Connect's bookkeeping keys are written elsewhere in a manifest (core.models.BOOKKEEPING_KEYS).
_WHERE: dict[str, Path] = {
    WHOLE_CONNECTOR: ("spec", "class"),
    "tasks.max": ("spec", "tasksMax"),
    "name": ("metadata", "name"),
}


def plugin_findings(manifest: ConnectorManifest, *, offsets: bool = True) -> list[Finding]:
    """What the connector's plugin (and Connect's own keys) find wrong with the manifest's config,
    and, with `offsets`, with the offsets its alter request sets."""
    props = connector_properties(DesiredConnector(manifest=manifest))
    request = manifest.spec.offsets
    # A reset's partitions are known only when it runs (the hook sees them then).
    alter = offsets and request is not None and request.action is OffsetsAction.ALTER
    altered = request.offsets if alter and request is not None else None
    return config_findings(manifest.spec.connector_class, props, altered)


def config_findings(class_name: str, props: Properties, offsets: list[OffsetEntry] | None = None) -> list[Finding]:
    """What the plugin named `class_name` finds wrong with `props` (as a Connect worker stores them),
    and, when the config has no problem, with the `offsets` an alter request sets.

    For a document the models refuse, too (read from its raw data): its config problems are
    reported in the same run as its structural ones, not after they are fixed.
    """
    class_name = class_name.strip()
    if is_java_class_name(class_name):
        python = python_spelling(class_name)
        if python is None:
            return []
        return [Finding(("spec", "class"), f"{class_name!r} is a Python class written with a dot",
                        f"write `{python}`: a dotted name is taken for a Java class")]
    try:
        plugin = load_connector(class_name)
    except UnknownConnector as exc:
        return [Finding(("spec", "class"), exc.message, exc.hint)]
    found = [_finding(problem) for problem in judged_problems(class_name, plugin, props)]
    if found or not offsets:
        return found
    return _offsets_findings(plugin, props, offsets)


def _offsets_findings(cls: type[Connector], props: Properties, entries: list[OffsetEntry]) -> list[Finding]:
    """The connector's refusals of an alter request (`validate_offsets`), each at its entry."""
    here: Path = ("spec", "offsets", "offsets")
    try:
        refused = refusals(cls(), props, entries)
    except InvalidConnectorConfig:
        return []  # a value a Connect worker will still replace (`is_judged`): the offsets cannot be judged
    except Exception as exc:  # a plugin bug is reported, not raised: the other manifests still get checked
        return [Finding(here, f"the plugin's validate_offsets() raised {type(exc).__name__}: {exc}")]
    return [
        Finding(
            here if r.entry is None else (*here, r.entry),
            f"the connector refuses {'the request' if r.entry is None else 'this entry'}: {r.message}",
            f"`reconciler offsets {props.get('name') or 'NAME'}` shows the partitions and offsets the connector has now",
        )
        for r in refused
    ]


def java_note(connector: DesiredConnector, class_source: SourceRef) -> Diagnostic | None:
    """An info line when the connector's class is a Java class: accepted unchecked, and why.

    At `spec.class` itself (`class_source`), as every other diagnostic about a key."""
    if not is_java_class_name(connector.spec.connector_class):
        return None
    return diagnostics.info(
        f"`{connector.spec.connector_class}` is a Java connector class: accepted without config checks "
        "(a Java Connect worker sharing these topics runs it; no plugin here can check it)",
        source=class_source,
        field_path="spec.class",
        connector=connector.name,
    )


def _finding(problem: ConfigProblem) -> Finding:
    path = _WHERE.get(problem.key, ("spec", "config", problem.key))
    return Finding(path, problem.message, problem.hint, "key" if problem.unknown else "value")
