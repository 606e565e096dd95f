"""Conditional creates on Google Cloud Storage and Azure Blob Storage, as plain HTTP requests:
one request makes an object whole under its final name, or is refused when the name exists
(the store keeps the first), so that a zombie task cannot overwrite a newer file.

- GCS: a JSON API multipart upload with `ifGenerationMatch=0` (412 when the object exists), the
  request Google's own client sends for a small object. The bearer token, when there is one, is
  added by the sender (`connectors.storage.upload`, google-auth).
- Azure: Put Blob with `If-None-Match: *` (409 BlobAlreadyExists, or 412, when the blob exists),
  signed with the account key (SharedKey: HMAC-SHA256 of Azure's string-to-sign), carrying a
  SAS token in its query, or a bearer token of Microsoft Entra ID (DefaultAzureCredential's,
  which the sender gets: azure-identity).

Pure: builds requests and reads statuses; `connectors.storage.upload` sends them. Why plain
requests and not Google's or Azure's SDKs: docs/connectors.md#storage.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import hmac
import json
import re
import urllib.parse
from dataclasses import dataclass, field
from enum import StrEnum

from reconciler.connectors.storage.options import sas_query

GOOGLE_STORAGE = "https://storage.googleapis.com"
# Put Blob takes up to 5000 MiB in one request since 2019-12-12; a bearer token needs 2017-11-09 on.
AZURE_VERSION = "2021-12-02"
OCTET_STREAM = "application/octet-stream"
_QUERY = re.compile(r"\?[^\s'\"()]*")


class UploadFailed(Exception):
    """A conditional create that could not be made: no connection, refused credentials, an error."""


@dataclass(frozen=True, kw_only=True)
class Request:
    """One HTTP request, as it goes on the wire (but GCS's bearer token, which google-auth's
    session adds). `shown` is the URL without its query, for messages: a SAS token is a secret;
    the headers (a signature, Azure's bearer token) are never shown."""

    method: str
    url: str
    headers: dict[str, str] = field(repr=False)
    body: bytes = field(repr=False)

    @property
    def shown(self) -> str:
        return self.url.split("?", 1)[0]

    def __repr__(self) -> str:  # never a secret, whoever prints it
        return f"Request({self.method} {self.shown}, {len(self.body)} bytes)"


class Answer(StrEnum):
    """What a store's status says of a conditional create."""

    CREATED = "created"
    EXISTS = "exists"  # refused: an object of that name is there, left as it was
    RETRY = "retry"  # a transient refusal (throttled, busy): the same request may be sent again
    FAILED = "failed"


def answer(status: int) -> Answer:
    """GCS answers 412 to a failed `ifGenerationMatch`; Azure 409 (BlobAlreadyExists) to a failed
    `If-None-Match: *` on Put Blob, 412 on some services and emulators."""
    if 200 <= status < 300:
        return Answer.CREATED
    if status in (409, 412):
        return Answer.EXISTS
    if status in (408, 429) or status >= 500:
        return Answer.RETRY
    return Answer.FAILED


# --- Google Cloud Storage -------------------------------------------------------------------


def gcs_create(*, endpoint: str | None, bucket: str, key: str, data: bytes, boundary: str) -> Request:
    """A multipart upload of `key` that only creates it. `endpoint`: an emulator's URL, or None
    for Google's; `boundary`: the multipart boundary (random per request, not found in `data`).
    The metadata carries the content's MD5, which GCS checks before it keeps the object."""
    base = (endpoint or GOOGLE_STORAGE).rstrip("/")
    query = urllib.parse.urlencode({"uploadType": "multipart", "ifGenerationMatch": "0"})
    url = f"{base}/upload/storage/v1/b/{urllib.parse.quote(bucket, safe='')}/o?{query}"
    metadata = json.dumps({"name": key, "contentType": OCTET_STREAM, "md5Hash": _md5(data)}).encode()
    body = b"".join([
        f"--{boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n".encode(), metadata,
        f"\r\n--{boundary}\r\nContent-Type: {OCTET_STREAM}\r\n\r\n".encode(), data,
        f"\r\n--{boundary}--\r\n".encode(),
    ])
    headers = {"Content-Type": f'multipart/related; boundary="{boundary}"'}
    return Request(method="POST", url=url, headers=headers, body=body)


# --- Azure Blob Storage ---------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class AzureAuth:
    """How a request to Azure is let in: the account key (signed), a SAS token (in the query), or
    an Entra ID access token for Azure Storage (`Authorization: Bearer`). None of them shown."""

    account_key: str | None = field(default=None, repr=False)
    sas_token: str | None = field(default=None, repr=False)
    bearer_token: str | None = field(default=None, repr=False)


def azure_blob_url(*, endpoint: str | None, account: str, container: str, blob: str) -> str:
    """The blob's URL: `https://{account}.blob.core.windows.net/…` on Azure; with an endpoint of
    one's own (Azurite) the account is the first segment of the path, as pyarrow addresses it."""
    path = "/".join(urllib.parse.quote(part, safe="") for part in (container, *blob.split("/")))
    if endpoint is None:
        return f"https://{account}.blob.core.windows.net/{path}"
    return f"{endpoint.rstrip('/')}/{urllib.parse.quote(account, safe='')}/{path}"


def azure_put_blob(*, url: str, account: str, data: bytes, auth: AzureAuth, now: datetime.datetime) -> Request:
    """Put Blob (a block blob, whole in one request) that only creates: `If-None-Match: *`.
    Content-MD5 has the service check the body it got."""
    headers = {
        "Content-Type": OCTET_STREAM,
        "Content-MD5": _md5(data),
        "If-None-Match": "*",
        "x-ms-blob-type": "BlockBlob",
        "x-ms-date": now.astimezone(datetime.UTC).strftime("%a, %d %b %Y %H:%M:%S GMT"),
        "x-ms-version": AZURE_VERSION,
    }
    if auth.account_key is not None:
        signature = shared_key_signature("PUT", url, headers, len(data), account, auth.account_key)
        headers["Authorization"] = f"SharedKey {account}:{signature}"
    elif auth.sas_token is not None:
        url = f"{url}{sas_query(auth.sas_token)}"
    elif auth.bearer_token is not None:
        headers["Authorization"] = f"Bearer {auth.bearer_token}"
    return Request(method="PUT", url=url, headers=headers, body=data)


def shared_key_signature(method: str, url: str, headers: dict[str, str], length: int, account: str,
                         key: str) -> str:
    """Base64 of HMAC-SHA256, keyed by the decoded account key, of `string_to_sign`."""
    text = string_to_sign(method, url, headers, length, account)
    return base64.b64encode(hmac.new(base64.b64decode(key), text.encode(), hashlib.sha256).digest()).decode()


_SIGNED = ("Content-Encoding", "Content-Language", "Content-Length", "Content-MD5", "Content-Type", "Date",
           "If-Modified-Since", "If-Match", "If-None-Match", "If-Unmodified-Since", "Range")


def string_to_sign(method: str, url: str, headers: dict[str, str], length: int, account: str) -> str:
    """Azure's SharedKey string-to-sign for the Blob service (versions 2015-02-21 on): the verb,
    the standard headers in their order (Content-Length empty when 0), the `x-ms-` headers
    lowercased and sorted, then the account and the URL's (encoded) path, then each query
    parameter, lowercased and sorted, on a line of its own."""
    lower = {name.lower(): value.strip() for name, value in headers.items()}
    standard = [str(length or "") if name == "Content-Length" else lower.get(name.lower(), "") for name in _SIGNED]
    ms = [f"{name}:{lower[name]}" for name in sorted(lower) if name.startswith("x-ms-")]
    parsed = urllib.parse.urlsplit(url)
    params: dict[str, list[str]] = {}
    for name, value in urllib.parse.parse_qsl(parsed.query, keep_blank_values=True):
        params.setdefault(name.lower(), []).append(value)
    resource = f"/{account}{parsed.path or '/'}" + "".join(
        f"\n{name}:{','.join(sorted(values))}" for name, values in sorted(params.items()))
    return "\n".join([method, *standard, *ms, resource])


def _md5(data: bytes) -> str:
    # Not for security: the integrity check both stores make of a body against its declared MD5.
    return base64.b64encode(hashlib.md5(data, usedforsecurity=False).digest()).decode()


def scrubbed(text: str, limit: int = 300) -> str:
    """A message in one line, cut at `limit`, without the query of any URL in it: a SAS token is
    one, and libraries' messages show the URL they asked."""
    return " ".join(_QUERY.sub("?…", text).split())[:limit]
