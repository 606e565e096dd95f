"""connect-reconciler: declarative, GitOps reconciler for Kafka Connect-style connectors.

Layers, top to bottom (docs/architecture.md; `lint-imports` checks them): `cli` (commands) and
`devtools` · `app` (the use cases) · `api` (REST) and `runtime` (tasks on Spark) · `offsets`
(KIP-875 requests) · `manifests` (YAML in) and `render` (plans out) · `connectors` (plugins) ·
`kafka` (Connect's topics) and `toolchain` (Java, Maven, caches) · the leaves `errors`, `heap`, `masking`, `failpoints` · `core` (pure).
"""

__version__ = "0.1.0"
