"""Java's ADLS and GCS FileIO properties (`iceberg.catalog.adls.*`, `.gcs.*`) as pyiceberg's.

Java's ADLSFileIO (Iceberg's `AzureProperties`) takes, per storage account host (the host of an
`abfs[s]://container@host/…` or `wasb[s]://` location), `adls.sas-token.<host>` and
`adls.connection-string.<host>` (the endpoint URL its client is built with; a SAS token in its
query wins), else the shared key `adls.auth.shared-key.account.name` + `.account.key`, else
DefaultAzureCredential. pyiceberg's pyarrow FileIO takes one account: `adls.account-name`,
`adls.account-key` or `adls.sas-token`, and the endpoint as `adls.{blob,dfs}-storage-{scheme,
authority}`. The account is the warehouse's, or the one account the per-host keys name; a key
for another account is a problem, never dropped in silence.

Java's GCSFileIO (`GCPProperties`) shares pyiceberg's names (`gcs.service.host`,
`gcs.oauth2.token`, `gcs.oauth2.token-expires-at`, `gcs.project-id`); `gcs.no-auth` has no
pyiceberg name and is read by our FileIO (`fileio.py`), which also fixes pyiceberg 0.12's ADLS
paths. Keys steering credentials or encryption that pyarrow's filesystems cannot take are refused.
Pure: no pyiceberg here (`validate` reads it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

from reconciler.connectors.storage.options import sas_query

FILE_IO: Final = "reconciler.connectors.iceberg.fileio.ReconcilerFileIO"
SHARED_NAME: Final = "adls.auth.shared-key.account.name"
SHARED_KEY: Final = "adls.auth.shared-key.account.key"
SAS_PREFIX: Final = "adls.sas-token."
ENDPOINT_PREFIX: Final = "adls.connection-string."
NO_AUTH: Final = "gcs.no-auth"
GCS_TOKEN: Final = "gcs.oauth2.token"
GCS_EXPIRES: Final = "gcs.oauth2.token-expires-at"
# Java takes a token without an expiry as never expiring; pyarrow wants one: 2100-01-01.
NEVER_MS: Final = "4102444800000"
# Java's `ADLSLocation.URI_PATTERN`.
_ADLS_LOCATION: Final = re.compile(r"^(abfss?|wasbs?)://([^/?#]+)")
_PREFIX: Final = "iceberg.catalog."
_REFUSED: Final = {
    "adls.token": "is not supported here: pyarrow's Azure filesystem takes no bearer token; use a SAS token, "
                  "the shared key, or DefaultAzureCredential's environment (AZURE_CLIENT_ID, …)",
    "adls.token-credential-provider": "is not supported here (a Java class); use DefaultAzureCredential's "
                                      "environment (AZURE_CLIENT_ID, AZURE_TENANT_ID, …)",
    "gcs.impersonate.service-account": "is not supported here: pyiceberg's GCS filesystem impersonates no "
                                       "account; use GOOGLE_APPLICATION_CREDENTIALS",
    "gcs.encryption-key": "is not supported here: pyarrow's GCS filesystem takes no customer-supplied key",
    "gcs.decryption-key": "is not supported here: pyarrow's GCS filesystem takes no customer-supplied key",
}


@dataclass(frozen=True, kw_only=True)
class Endpoint:
    """An ADLS endpoint URL as pyarrow's Azure filesystem takes it."""

    scheme: str
    blob_authority: str
    dfs_authority: str
    account: str
    sas_token: str | None = None


def file_io_properties(java: Mapping[str, str]) -> tuple[dict[str, str], str | None]:
    """pyiceberg's FileIO properties for Java's (the catalog's, prefix removed): Java's ADLS keys
    translated and removed, pyiceberg's own passed through; or ({}, "iceberg.catalog.<key>: why")."""
    for key, why in _REFUSED.items():
        if java.get(key):
            return {}, f"{_PREFIX}{key}: {why}"
    adls, problem = adls_properties(java)
    if problem is None:
        problem = _gcs_problem(java)
    if problem is not None:
        return {}, problem
    props = {key: value for key, value in java.items() if not key.startswith((SAS_PREFIX, ENDPOINT_PREFIX))
             and key not in (SHARED_NAME, SHARED_KEY)}
    if java.get(GCS_TOKEN) and not java.get(GCS_EXPIRES):
        props[GCS_EXPIRES] = NEVER_MS
    props.setdefault("py-io-impl", FILE_IO)
    return {**props, **adls}, None


def adls_properties(java: Mapping[str, str]) -> tuple[dict[str, str], str | None]:
    """pyiceberg's `adls.*` for Java's, for the one account pyiceberg reaches; or ({}, why not)."""
    name, key = java.get(SHARED_NAME), java.get(SHARED_KEY)
    if (name is None) != (key is None):
        given, missing = (SHARED_NAME, SHARED_KEY) if key is None else (SHARED_KEY, SHARED_NAME)
        return {}, f"{_PREFIX}{missing}: is required with {_PREFIX}{given} (the shared key is both)"
    host, problem = account_host(java)
    if problem is not None:
        return {}, problem
    if host is None:
        return ({"adls.account-name": name, "adls.account-key": key} if name and key else {}), None
    props: dict[str, str] = {"adls.account-name": host.split(".")[0]}
    sas = java.get(SAS_PREFIX + host) or None
    if url := java.get(ENDPOINT_PREFIX + host):
        endpoint, problem = parse_endpoint(url, ENDPOINT_PREFIX + host)
        if endpoint is None:
            return {}, problem
        props.update({"adls.account-name": endpoint.account, "adls.blob-storage-scheme": endpoint.scheme,
                      "adls.dfs-storage-scheme": endpoint.scheme, "adls.blob-storage-authority": endpoint.blob_authority,
                      "adls.dfs-storage-authority": endpoint.dfs_authority})
        sas = endpoint.sas_token or sas  # Java applies the endpoint last: its parameters win
    if sas:
        # pyarrow appends the token to each URL as given: without its `?` every request is a 400.
        props["adls.sas-token"] = sas_query(sas)
    elif name and key:
        if name != props["adls.account-name"]:
            return {}, (f"{_PREFIX}{SHARED_NAME}: names account {name!r}, but the warehouse's account is "
                        f"{props['adls.account-name']!r}")
        props["adls.account-key"] = key
    return props, None


def account_host(java: Mapping[str, str]) -> tuple[str | None, str | None]:
    """The storage account host pyiceberg reaches: the warehouse's (abfs[s]/wasb[s]), else the one
    the per-host keys name; None when nothing names one; or (None, why not)."""
    named = sorted({key[len(prefix):] for key in java for prefix in (SAS_PREFIX, ENDPOINT_PREFIX)
                    if key.startswith(prefix)})
    host, problem = warehouse_host(java.get("warehouse", ""))
    if problem is not None:
        return None, problem
    chosen = host or (named[0] if named else None)
    others = [each for each in named if each != chosen]
    if others:
        key = next(prefix + others[0] for prefix in (SAS_PREFIX, ENDPOINT_PREFIX) if prefix + others[0] in java)
        where = f"the warehouse's ({host})" if host else f"one ({chosen})"
        return None, (f"{_PREFIX}{key}: pyiceberg reaches one storage account, {where}: keys for another are "
                      "not supported here")
    return chosen, None


def warehouse_host(warehouse: str) -> tuple[str | None, str | None]:
    """The account host of an ADLS warehouse (Java's `ADLSLocation.host()`), None for another
    scheme; or (None, why not)."""
    match = _ADLS_LOCATION.match(warehouse.strip())
    if match is None:
        return None, None
    container, at, host = match.group(2).rpartition("@")
    if not at or not container:
        return None, (f"{_PREFIX}warehouse: must name its container here "
                      f"({match.group(1)}://container@account.dfs.core.windows.net/path)")
    return host, None


def parse_endpoint(url: str, key: str) -> tuple[Endpoint | None, str | None]:
    """Java's `adls.connection-string.<host>` (the client's endpoint): `https://<account>.<host>`,
    or an emulator's `http://host:port/<account>` (the account in the path); a query is a SAS token
    (the Azure SDK reads it so)."""
    parts = urlsplit(url.strip())
    segments = [each for each in parts.path.split("/") if each]
    shape = "https://<account>.dfs.core.windows.net, or an emulator's http://host:port/<account>"
    if parts.scheme not in ("http", "https") or not parts.hostname or len(segments) > 1:
        return None, f"{_PREFIX}{key}: must be the account's endpoint URL ({shape})"
    authority = parts.netloc.rpartition("@")[2]
    query = parts.query or None
    if segments:  # path style, as emulators serve it: the account after the host
        return Endpoint(scheme=parts.scheme, blob_authority=authority, dfs_authority=authority, account=segments[0],
                        sas_token=query), None
    account, dot, suffix = authority.partition(".")
    if not dot:
        return None, f"{_PREFIX}{key}: names no account ({shape})"
    # The Azure SDK turns a DFS endpoint into the blob one and back by this swap; pyarrow takes
    # an authority starting with "." as the account's suffix.
    return Endpoint(scheme=parts.scheme, blob_authority=f".{suffix}".replace(".dfs.", ".blob.", 1),
                    dfs_authority=f".{suffix}".replace(".blob.", ".dfs.", 1), account=account, sas_token=query), None


def _gcs_problem(java: Mapping[str, str]) -> str | None:
    """Java's `GCPProperties` refuses no-auth with a token."""
    if java.get(NO_AUTH, "").strip().lower() == "true" and java.get(GCS_TOKEN):
        return f"{_PREFIX}{NO_AUTH}: cannot be true with {_PREFIX}{GCS_TOKEN}"
    return None
