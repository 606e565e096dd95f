"""delta-sink's keys and settings, and how its `s3.*` keys reach delta-rs and pyarrow. Pure.

`storage_options` and `s3_filesystem_args` are the one place the store keys are mapped: when the
shared storage layer (`connectors.storage`) lands, they are swapped for its `StoreOptions`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

from reconciler.connectors.configdef import ConfigDef, ConfigProblem, ConnectorConfig, Type, topic_names
from reconciler.connectors.settings import ConnectorSettings, setting

TOLERANCES: Final = ("none", "all")
# Connect's own fields of a sink record: the table's first columns, beside the value's.
RECORD_FIELDS: Final = ("topic", "partition", "offset", "timestamp", "key", "headers")
OBJECT_SCHEMES: Final = ("s3", "s3a")

CONFIG_DEF = (
    ConfigDef()
    .define("topics", Type.LIST, "Topics to write, comma-separated (or `topics.regex`).", default="",
            validator=topic_names)
    .define("topics.regex", Type.STRING, "A regular expression of the topics to write.", default="")
    .define("delta.table.uri", Type.STRING, "The table: a local path, file:// or s3:// URI.")
    .define("delta.partition.by", Type.LIST, "Columns the table is partitioned by (when it is created).",
            default="")
    .define("delta.auto.create", Type.BOOLEAN, "Create the table when it does not exist.", default=True)
    .define("delta.evolve.schema", Type.BOOLEAN, "Add new (nullable) columns of the records to the table.",
            default=True)
    .define("delta.max.records.per.file", Type.INT, "Records a data file holds at most: a task writes its files "
            "each time it has read this many, so its memory is bounded by them.", default=100_000, minimum=1)
    .define("errors.tolerance", Type.STRING, "none: a record that does not decode fails the task; all: it is "
            "skipped.", default="none", choices=TOLERANCES, ignore_case=True)
    .define("s3.endpoint", Type.STRING, "S3 endpoint URL (an S3-compatible store); default: the AWS variables.",
            default="")
    .define("s3.region", Type.STRING, "S3 region; default: AWS_REGION.", default="")
    .define("s3.path.style.access", Type.BOOLEAN, "Path-style S3 requests (most S3-compatible stores).",
            default=False)
    .define("s3.access.key.id", Type.PASSWORD, "S3 access key id; default: the AWS credential chain.", default="")
    .define("s3.secret.access.key", Type.PASSWORD, "S3 secret access key; default: the AWS credential chain.",
            default="")
)


@dataclass(frozen=True, kw_only=True)
class DeltaSinkSettings(ConnectorSettings):
    config_def = CONFIG_DEF

    topics: tuple[str, ...]
    topics_regex: str
    table_uri: str = setting("delta.table.uri")
    partition_by: tuple[str, ...] = setting("delta.partition.by")
    auto_create: bool = setting("delta.auto.create")
    evolve_schema: bool = setting("delta.evolve.schema")
    max_records_per_file: int = setting("delta.max.records.per.file")
    errors_tolerance: str
    s3_endpoint: str
    s3_region: str
    s3_path_style_access: bool
    s3_access_key_id: str
    s3_secret_access_key: str

    def more_problems(self, found: list[ConfigProblem]) -> list[ConfigProblem]:
        problems = []
        if not self.topics and not self.topics_regex.strip() and not any(p.key == "topics" for p in found):
            problems.append(ConfigProblem("topics", "names no topic", "set `topics` or `topics.regex`"))
        scheme = urlsplit(self.table_uri).scheme.lower()
        if len(scheme) > 1 and scheme not in (*OBJECT_SCHEMES, "file"):
            problems.append(ConfigProblem("delta.table.uri", f"`{scheme}://` is not a store delta-sink writes to",
                                          "use a local path, file:// or s3://"))
        clash = sorted(set(self.partition_by) & {"headers", "key"})
        if clash:
            problems.append(ConfigProblem("delta.partition.by", f"cannot partition by `{clash[0]}`",
                                          "use a value column, or topic, partition or offset"))
        return problems

    @property
    def object_store(self) -> bool:
        return urlsplit(self.table_uri).scheme.lower() in OBJECT_SCHEMES

    @property
    def uri(self) -> str:
        """The table's URI for delta-rs: s3a:// spelt s3://, file:// as a plain path."""
        parts = urlsplit(self.table_uri)
        if parts.scheme.lower() == "s3a":
            return "s3://" + self.table_uri.split("://", 1)[1]
        if parts.scheme.lower() == "file":
            return parts.path
        return self.table_uri


def read_settings(config: ConnectorConfig) -> tuple[DeltaSinkSettings, list[ConfigProblem]]:
    return DeltaSinkSettings.read(config)


def storage_options(settings: DeltaSinkSettings) -> dict[str, str]:
    """delta-rs `storage_options` for the table (object_store's AWS keys); empty for a local
    table. Unset keys leave the AWS variables (AWS_ACCESS_KEY_ID, AWS_ENDPOINT_URL…) in charge."""
    if not settings.object_store:
        return {}
    options = {
        "AWS_ENDPOINT_URL": settings.s3_endpoint,
        "AWS_REGION": settings.s3_region,
        "AWS_ACCESS_KEY_ID": settings.s3_access_key_id,
        "AWS_SECRET_ACCESS_KEY": settings.s3_secret_access_key,
    }
    options = {key: value for key, value in options.items() if value}
    if settings.s3_endpoint.startswith("http://"):
        options["AWS_ALLOW_HTTP"] = "true"
    if settings.s3_path_style_access:
        options["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] = "false"
    # The driver is the table's only committer per batch and fences by offsets; S3 has no
    # rename, so delta-rs is told not to wait for a lock provider.
    options["AWS_S3_ALLOW_UNSAFE_RENAME"] = "true"
    return options


def s3_filesystem_args(settings: DeltaSinkSettings) -> dict[str, object]:
    """pyarrow `S3FileSystem` arguments for the tasks' data files (same keys, same defaults)."""
    args: dict[str, object] = {}
    if settings.s3_endpoint:
        parts = urlsplit(settings.s3_endpoint)
        args["endpoint_override"] = parts.netloc or settings.s3_endpoint
        args["scheme"] = parts.scheme or "https"
    if settings.s3_region:
        args["region"] = settings.s3_region
    if settings.s3_access_key_id and settings.s3_secret_access_key:
        args["access_key"] = settings.s3_access_key_id
        args["secret_key"] = settings.s3_secret_access_key
    if settings.s3_path_style_access:
        args["force_virtual_addressing"] = False
    return args
