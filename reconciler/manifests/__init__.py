"""Reading manifests: YAML files and directories → validated `DesiredConnector`s + diagnostics.

    result = load_manifests(["manifests/"])      # never raises for bad manifests
    connectors = load_or_raise(["manifests/"])   # raises reconciler.errors.InvalidManifests

Modules: `loader` (paths, files, duplicates), `documents` (YAML → data + node positions),
`interpolate` (placeholders resolved for the checks only), `rules` / `schema_errors` /
`validate` (checks and messages), `schema` (the JSON Schema generated from the models),
`schema_check` (the pre-commit check of each file), `strimzi` (Strimzi `KafkaConnector`
resources read as manifests), `plugin_checks` (each config checked against its plugin), `cache` and
`forked` (large trees), `watch` (file events for `watch`).

May import `core`, `connectors` (the plugins that check configs), `kafka.io.config_providers`
(placeholders) and the leaves; no Kafka client, Spark or CLI code (docs/architecture.md).
"""

from reconciler.manifests.loader import LoadResult, load_manifests, load_or_raise, manifest_files

__all__ = ["LoadResult", "load_manifests", "load_or_raise", "manifest_files"]
