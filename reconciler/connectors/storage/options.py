"""A connector's object-store settings (`s3.*`, `gcs.*`, `azblob.*` keys), parsed into one typed
value other sinks reuse.

`with_storage_keys` adds the keys to a connector's `ConfigDef`; `StoreOptions.read(parsed config)`
gives the value, and its `pyarrow_s3_args()`, `botocore_args()`, `object_store_options()`
(delta-rs `storage_options`) and `pyiceberg_properties()` (pyiceberg FileIO) say the same thing
to each library; `pyarrow_gcs_args()` and `pyarrow_azure_args()` for GCS and Azure. Keys left
unset leave each cloud's own chain in charge (AWS: environment, profiles, instance roles; Google:
application default credentials; Azure: DefaultAzureCredential): nothing is set that the SDK
would otherwise find itself. Pure: no I/O (`os.environ` is read by the store, not here).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from reconciler.connectors.configdef import ConfigDef, ConnectorConfig, Type

ENDPOINT, REGION, PATH_STYLE = "s3.endpoint", "s3.region", "s3.path.style.access"
ACCESS_KEY_ID, SECRET_ACCESS_KEY = "s3.access.key.id", "s3.secret.access.key"
GCS_ENDPOINT, GCS_ANONYMOUS = "gcs.endpoint", "gcs.anonymous"
# Confluent's Azure Blob Storage connectors' names for the key and the SAS token; the endpoint is ours.
AZURE_ENDPOINT, AZURE_KEY, AZURE_SAS = "azblob.endpoint", "azblob.account.key", "azblob.sas.token"


def with_storage_keys(config_def: ConfigDef) -> ConfigDef:
    """`config_def` with the object-store keys every file connector takes."""
    return (
        config_def
        .define(ENDPOINT, Type.STRING, "S3 endpoint URL (an S3-compatible store); default: AWS_ENDPOINT_URL_S3, "
                "AWS_ENDPOINT_URL or AWS's own.", default=None, validator=_endpoint_problem)
        .define(REGION, Type.STRING, "S3 region; default: AWS_REGION, the profile's, or us-east-1.", default=None)
        .define(PATH_STYLE, Type.BOOLEAN, "Path-style S3 requests (http://host/bucket/key), as most "
                "S3-compatible stores want; default: virtual-hosted unless an endpoint is set.", default=None)
        .define(ACCESS_KEY_ID, Type.PASSWORD, "S3 access key id; default: the AWS credential chain.", default=None)
        .define(SECRET_ACCESS_KEY, Type.PASSWORD, "S3 secret access key; default: the AWS credential chain.",
                default=None)
        .define(GCS_ENDPOINT, Type.STRING, "Google Cloud Storage endpoint URL (an emulator such as "
                "fake-gcs-server); default: STORAGE_EMULATOR_HOST, or Google's.", default=None,
                validator=_endpoint_problem)
        .define(GCS_ANONYMOUS, Type.BOOLEAN, "Reach GCS without credentials (public buckets, emulators); "
                "default: Google's application default credentials (GOOGLE_APPLICATION_CREDENTIALS).",
                default=False)
        .define(AZURE_ENDPOINT, Type.STRING, "Azure Blob Storage endpoint URL, the account's name not in it "
                "(an emulator such as Azurite: http://127.0.0.1:10000); default: Azure's.", default=None,
                validator=_endpoint_problem)
        .define(AZURE_KEY, Type.PASSWORD, "Azure storage account key; default: DefaultAzureCredential.",
                default=None)
        .define(AZURE_SAS, Type.PASSWORD, "Azure SAS token, instead of the account key.", default=None)
    )


def _endpoint_problem(value: object) -> str | None:
    if isinstance(value, str) and not value.startswith(("http://", "https://")):
        return f"must be an http:// or https:// URL; got {value!r}"
    return None


@dataclass(frozen=True, kw_only=True)
class StoreOptions:
    """What a connector says about reaching its store; None: the AWS chain decides."""

    endpoint: str | None = None
    region: str | None = None
    path_style: bool | None = None
    access_key_id: str | None = None
    secret_access_key: str | None = None
    gcs_endpoint: str | None = None
    gcs_anonymous: bool = False
    azure_endpoint: str | None = None
    azure_account_key: str | None = None
    azure_sas_token: str | None = None

    @classmethod
    def read(cls, config: ConnectorConfig) -> StoreOptions:
        """The options of a config (validated already: blank values count as unset)."""
        def text(key: str) -> str | None:
            value = (config.get(key) or "").strip()
            return value or None

        style = text(PATH_STYLE)
        return cls(endpoint=text(ENDPOINT), region=text(REGION),
                   path_style=None if style is None else style.lower() == "true",
                   access_key_id=text(ACCESS_KEY_ID), secret_access_key=text(SECRET_ACCESS_KEY),
                   gcs_endpoint=text(GCS_ENDPOINT), gcs_anonymous=(text(GCS_ANONYMOUS) or "").lower() == "true",
                   azure_endpoint=text(AZURE_ENDPOINT), azure_account_key=text(AZURE_KEY),
                   azure_sas_token=text(AZURE_SAS))

    def __repr__(self) -> str:  # never a secret, whoever prints it
        def masked(value: str | None) -> str | None:
            return None if value is None else "********"

        return (f"StoreOptions(endpoint={self.endpoint!r}, region={self.region!r}, path_style={self.path_style!r}, "
                f"access_key_id={self.access_key_id!r}, secret_access_key={masked(self.secret_access_key)!r}, "
                f"gcs_endpoint={self.gcs_endpoint!r}, gcs_anonymous={self.gcs_anonymous!r}, "
                f"azure_endpoint={self.azure_endpoint!r}, azure_account_key={masked(self.azure_account_key)!r}, "
                f"azure_sas_token={masked(self.azure_sas_token)!r})")

    @property
    def virtual_hosted(self) -> bool:
        """Whether requests name the bucket in the host: AWS's default, not with an endpoint of one's own."""
        return not self.path_style if self.path_style is not None else self.endpoint is None

    def pyarrow_s3_args(self) -> dict[str, Any]:
        """Keyword arguments of `pyarrow.fs.S3FileSystem` (its AWS SDK reads the chain for the rest)."""
        args: dict[str, Any] = {"force_virtual_addressing": self.path_style is False}
        if self.endpoint:
            args["endpoint_override"] = self.endpoint
            args["scheme"] = self.endpoint.split(":", 1)[0]
        if self.region:
            args["region"] = self.region
        if self.access_key_id and self.secret_access_key:
            args["access_key"], args["secret_key"] = self.access_key_id, self.secret_access_key
        return args

    def botocore_args(self) -> dict[str, Any]:
        """Keyword arguments of botocore's `create_client("s3", …)`, but `config` (see `addressing`)."""
        args: dict[str, Any] = {}
        if self.endpoint:
            args["endpoint_url"] = self.endpoint
        if self.region:
            args["region_name"] = self.region
        if self.access_key_id and self.secret_access_key:
            args["aws_access_key_id"], args["aws_secret_access_key"] = self.access_key_id, self.secret_access_key
        return args

    @property
    def addressing(self) -> str:
        """botocore's `s3.addressing_style`."""
        return "auto" if self.path_style is None else ("path" if self.path_style else "virtual")

    def object_store_options(self) -> dict[str, str]:
        """delta-rs `storage_options` (the object_store crate's AWS keys); unset keys are left to
        its own reading of the AWS_* variables."""
        options: dict[str, str] = {}
        if self.endpoint:
            options["AWS_ENDPOINT_URL"] = self.endpoint
            options["AWS_ALLOW_HTTP"] = "true" if self.endpoint.startswith("http://") else "false"
        if self.region:
            options["AWS_REGION"] = self.region
        if self.path_style is not None:
            options["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] = "false" if self.path_style else "true"
        if self.access_key_id and self.secret_access_key:
            options["AWS_ACCESS_KEY_ID"] = self.access_key_id
            options["AWS_SECRET_ACCESS_KEY"] = self.secret_access_key
        # Conditional PUTs (If-None-Match) make delta-rs's commits safe without a lock table.
        options["AWS_CONDITIONAL_PUT"] = "etag"
        return options

    def pyiceberg_properties(self) -> dict[str, str]:
        """pyiceberg catalog / FileIO properties (`s3.*`, Iceberg's own S3FileIO names)."""
        properties: dict[str, str] = {}
        if self.endpoint:
            properties["s3.endpoint"] = self.endpoint
        if self.region:
            properties["s3.region"] = self.region
        if self.path_style is not None:
            properties["s3.force-virtual-addressing"] = "false" if self.path_style else "true"
        if self.access_key_id and self.secret_access_key:
            properties["s3.access-key-id"] = self.access_key_id
            properties["s3.secret-access-key"] = self.secret_access_key
        return properties

    def gcs_url(self, env: Mapping[str, str]) -> str | None:
        """The GCS endpoint of one's own: the key's, else the emulator variable Google's SDKs read."""
        emulator = (env.get("STORAGE_EMULATOR_HOST") or "").strip()
        if emulator and "://" not in emulator:
            emulator = f"http://{emulator}"
        return self.gcs_endpoint or emulator or None

    def pyarrow_gcs_args(self, env: Mapping[str, str]) -> dict[str, Any]:
        """Keyword arguments of `pyarrow.fs.GcsFileSystem` (Google's default credentials for the rest)."""
        args: dict[str, Any] = {"anonymous": self.gcs_anonymous}
        url = self.gcs_url(env)
        if url:
            args["scheme"], args["endpoint_override"] = scheme_and_authority(url)
        return args

    def pyarrow_azure_args(self, account: str) -> dict[str, Any]:
        """Keyword arguments of `pyarrow.fs.AzureFileSystem` for `account` (DefaultAzureCredential
        when neither the key nor a SAS token is given)."""
        args: dict[str, Any] = {"account_name": account}
        if self.azure_endpoint:
            scheme, authority = scheme_and_authority(self.azure_endpoint)
            args.update(blob_storage_scheme=scheme, blob_storage_authority=authority,
                        dfs_storage_scheme=scheme, dfs_storage_authority=authority)
        if self.azure_account_key:
            args["account_key"] = self.azure_account_key
        elif self.azure_sas_token:
            # pyarrow appends the token to the URL as given: without its `?` (as Azure's portal
            # shows it) the token became a path segment, and every request a 400.
            args["sas_token"] = sas_query(self.azure_sas_token)
        return args

    def shown_endpoint(self, env: Mapping[str, str]) -> str:
        """The endpoint as messages name it: the key's, else the variables', else AWS's."""
        return self.endpoint or env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or "AWS S3"


def sas_query(token: str) -> str:
    """A SAS token as a URL's query, `?` first, whether it was given with it or not (as Azure's
    portal shows it): pyarrow and our requests append it as given."""
    return f"?{token.lstrip('?')}"


def scheme_and_authority(url: str) -> tuple[str, str]:
    """`http://host:port/…` → ("http", "host:port")."""
    scheme, _, rest = url.partition("://")
    return scheme, rest.split("/", 1)[0]
