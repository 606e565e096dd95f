"""How to reach the cluster and where Connect's internal topics are: plain data, no client import.

Connect names a cluster by its `group.id`; the internal topics default to `<group>-configs`,
`<group>-status` and `<group>-offsets` here (Connect leaves them to the operator), plus our own
`<group>-reconciler` topic for ownership, applied request ids and offsets snapshots.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

DEFAULT_BOOTSTRAP = "localhost:9092"
DEFAULT_GROUP = "connect-cluster"
DEFAULT_TIMEOUT_S = 30.0


@dataclass(frozen=True, kw_only=True)
class Topics:
    configs: str
    status: str
    offsets: str
    reconciler: str
    status_partitions: int = 5
    offsets_partitions: int = 25
    replication_factor: int = -1  # broker default

    @classmethod
    def for_group(cls, group_id: str) -> Topics:
        return cls(
            configs=f"{group_id}-configs",
            status=f"{group_id}-status",
            offsets=f"{group_id}-offsets",
            reconciler=f"{group_id}-reconciler",
        )


@dataclass(frozen=True, kw_only=True)
class KafkaSettings:
    bootstrap_servers: str = DEFAULT_BOOTSTRAP
    group_id: str = DEFAULT_GROUP
    topics: Topics = field(default_factory=lambda: Topics.for_group(DEFAULT_GROUP))
    # Extra librdkafka settings for every client (SASL/SSL…), from -X and --kafka-config.
    client_config: dict[str, str] = field(default_factory=dict)
    create_topics: bool = True
    timeout_s: float = DEFAULT_TIMEOUT_S

    @property
    def transactional_id(self) -> str:
        """Stable per group, so a second reconciler on the same group fences the first.

        Deliberately not Java's leader id `connect-cluster-<group>`: every apply claims its id
        first, and a Java leader fenced that way fails its next config-topic write and has to
        reclaim the id (docs/compatibility.md, "Write side: deliberate differences")."""
        return f"reconciler-{self.group_id}"

    def client(self, **overrides: str | int | float | bool) -> dict[str, str | int | float | bool]:
        """A librdkafka config dict: bootstrap + user settings + the caller's overrides."""
        conf: dict[str, str | int | float | bool] = {"bootstrap.servers": self.bootstrap_servers}
        conf.update(self.client_config)
        conf.update(overrides)
        return conf


def bootstrap_from_env(default: str = DEFAULT_BOOTSTRAP) -> str:
    return os.environ.get("RECONCILER_BOOTSTRAP_SERVERS", default)


def parse_properties(text: str) -> dict[str, str]:
    """Java `.properties` subset: `key=value` / `key: value` lines, `#`/`!` comments."""
    props: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        sep = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        if sep < 0:
            props[line] = ""
            continue
        props[line[:sep].strip()] = line[sep + 1 :].strip()
    return props
