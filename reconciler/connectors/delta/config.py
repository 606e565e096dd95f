"""delta-sink's keys and settings, and how its store keys reach delta-rs. Pure.

The table's location and the keys that reach its store are the file connectors' own
(`connectors.storage`: `delta.table.uri` parsed as a `path` is, the `s3.*`, `gcs.*` and
`azblob.*` keys read into one `StoreOptions`); the tasks write their data files through that
storage layer's pyarrow filesystem, and `storage_options` says the same settings to delta-rs for
the driver's commits. Tables on a local disk, S3, GCS, Azure and HDFS
(docs/connectors.md#where-tables-live).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

from reconciler.connectors.api import ConnectorError
from reconciler.connectors.configdef import ConfigDef, ConfigProblem, ConnectorConfig, Type, topic_names
from reconciler.connectors.settings import ConnectorSettings, derived, setting
from reconciler.connectors.storage import Location, Scheme, StoreOptions, location_problem, parse_location, with_storage_keys
from reconciler.connectors.storage.options import scheme_and_authority

TOLERANCES: Final = ("none", "all")
# Connect's own fields of a sink record: the table's first columns, beside the value's.
RECORD_FIELDS: Final = ("topic", "partition", "offset", "timestamp", "key", "headers")

CONFIG_DEF = with_storage_keys(
    ConfigDef()
    .define("topics", Type.LIST, "Topics to write, comma-separated (or `topics.regex`).", default="",
            validator=topic_names)
    .define("topics.regex", Type.STRING, "A regular expression of the topics to write.", default="")
    .define("delta.table.uri", Type.STRING, "The table: a local path, file:///…, s3://bucket/prefix, "
            "gs://bucket/prefix, abfs://container@account.dfs.core.windows.net/prefix or "
            "hdfs://namenode:port/path.",
            validator=location_problem)
    .define("delta.partition.by", Type.LIST, "Columns the table is partitioned by (when it is created).",
            default="")
    .define("delta.auto.create", Type.BOOLEAN, "Create the table when it does not exist.", default=True)
    .define("delta.evolve.schema", Type.BOOLEAN, "Add new (nullable) columns of the records to the table.",
            default=True)
    .define("delta.max.records.per.file", Type.INT, "Records a data file holds at most: a task writes its files "
            "each time it has read this many, so its memory is bounded by them.", default=100_000, minimum=1)
    .define("errors.tolerance", Type.STRING, "none: a record that does not decode fails the task; all: it is "
            "skipped.", default="none", choices=TOLERANCES, ignore_case=True)
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
    store: StoreOptions = derived(lambda parsed, config: StoreOptions.read(config), secret=True)

    def more_problems(self, found: list[ConfigProblem]) -> list[ConfigProblem]:
        problems = []
        if not self.topics and not self.topics_regex.strip() and not any(p.key == "topics" for p in found):
            problems.append(ConfigProblem("topics", "names no topic", "set `topics` or `topics.regex`"))
        clash = sorted(set(self.partition_by) & {"headers", "key"})
        if clash:
            problems.append(ConfigProblem("delta.partition.by", f"cannot partition by `{clash[0]}`",
                                          "use a value column, or topic, partition or offset"))
        return problems

    @property
    def location(self) -> Location:
        return parse_location(self.table_uri)

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


def storage_options(settings: DeltaSinkSettings, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """delta-rs `storage_options` for the table (object_store's keys); empty for a local table.
    Unset keys leave each cloud's own variables in charge (AWS_ACCESS_KEY_ID, AWS_ENDPOINT_URL…;
    GOOGLE_APPLICATION_CREDENTIALS; AZURE_CLIENT_ID, a managed identity…), as for the file
    connectors; `env`: the variables the file connectors read themselves (STORAGE_EMULATOR_HOST)."""
    location, options = settings.location, settings.store
    if location.scheme is Scheme.GS:
        return _gcs_options(options, env or {})
    if location.scheme is Scheme.S3:
        s3 = {
            "AWS_ENDPOINT_URL": options.endpoint, "AWS_REGION": options.region,
            "AWS_ACCESS_KEY_ID": options.access_key_id, "AWS_SECRET_ACCESS_KEY": options.secret_access_key,
        }
        found = {key: value for key, value in s3.items() if value}
        if (options.endpoint or "").startswith("http://"):
            found["AWS_ALLOW_HTTP"] = "true"
        if options.path_style:
            found["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] = "false"
        # The driver is the table's only committer per batch and fences by offsets; S3 has no
        # rename, so delta-rs is told not to wait for a lock provider.
        found["AWS_S3_ALLOW_UNSAFE_RENAME"] = "true"
        return found
    if location.scheme is Scheme.ABFS:
        # Azure's Put Blob takes If-None-Match: delta-rs's commits are conditional there of themselves.
        azure = {"azure_storage_account_name": location.account,
                 "azure_storage_account_key": options.azure_account_key,
                 "azure_storage_sas_key": (options.azure_sas_token or "").lstrip("?") or None,
                 "azure_storage_endpoint": f"{options.azure_endpoint.rstrip('/')}/{location.account}"
                 if options.azure_endpoint else None}
        found = {key: value for key, value in azure.items() if value}
        if (options.azure_endpoint or "").startswith("http://"):
            found["azure_allow_http"] = "true"
        return found
    return {}  # a local disk; HDFS: hdfs-native reads the Hadoop configuration itself, as for the file connectors


def _gcs_options(options: StoreOptions, env: Mapping[str, str]) -> dict[str, str]:
    """object_store's GCS keys: its base URL is the endpoint's scheme and authority, as pyarrow's
    `endpoint_override` is. object_store has no anonymous client that writes (`skip_signature`
    still fetches a token for a PUT): `gcs.anonymous` is a service-account key with
    `disable_oauth` and no secret in it, as object_store's own tests reach fake-gcs-server."""
    url = options.gcs_url(env)
    if options.gcs_anonymous and not url:
        raise ConnectorError("gcs.anonymous=true needs gcs.endpoint (or STORAGE_EMULATOR_HOST) for a Delta table: "
                             "delta-rs has no unsigned writes to reach Google's own GCS with")
    if not url:
        return {}
    scheme, authority = scheme_and_authority(url)
    base = f"{scheme}://{authority}"
    if not options.gcs_anonymous:
        return {"google_base_url": base}
    key = {"gcs_base_url": base, "disable_oauth": True, "client_email": "", "private_key": "", "private_key_id": ""}
    return {"google_base_url": base, "google_service_account_key": json.dumps(key)}
