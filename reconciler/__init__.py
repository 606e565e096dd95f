"""connect-reconciler: declarative, GitOps reconciler for Kafka Connect-style connectors.

Layout: `core` (pure models, diff, plan) · `manifests` (reading YAML) · `render` (text,
Markdown, JSON) · `kafka` (Connect's internal topics) · `runtime` + `connectors` (tasks on
Spark) · `cli` (commands).
"""

__version__ = "0.1.0"
