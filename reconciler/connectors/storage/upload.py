"""Sending the conditional creates of `connectors.storage.conditional` to GCS and Azure.

`conditional_creator(location, options, env)` gives the `Creator` of a store, through the
credentials the store's pyarrow filesystem uses: on GCS none (`gcs.anonymous`) or Google's
application default credentials, by google-auth (which refreshes the bearer token); on Azure the
account key, the SAS token, or else DefaultAzureCredential's bearer token, by azure-identity
(`AzureTokens`: the credentials pyarrow's C++ SDK tries, in its order). None for the stores that
are not GCS or Azure. A transient failure (no connection, a timeout, 408/429/5xx) is sent again,
twice at most: a create that succeeded before its answer was lost is then refused as existing,
which the caller treats as any other writer's file (the files are the truth).

I/O at the edge: `requests`, and google-auth or azure-identity only when a token is needed; the
store loads this module on its first write to GCS or Azure (`validate` never does).
Failures are `UploadFailed` with a one-line reason that never holds a secret (no query string:
a SAS token is one; no header: a signature or a bearer token is one).
"""

from __future__ import annotations

import datetime
import json
import logging
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import requests

from reconciler.connectors.storage.conditional import (
    Answer,
    AzureAuth,
    Request,
    UploadFailed,
    answer,
    azure_blob_url,
    azure_put_blob,
    gcs_create,
    scrubbed,
)
from reconciler.connectors.storage.location import Location, Scheme
from reconciler.connectors.storage.options import StoreOptions

GCS_SCOPE = "https://www.googleapis.com/auth/devstorage.read_write"
AZURE_SCOPE = "https://storage.azure.com/.default"
TOKEN_MARGIN_S = 300.0  # an Azure token is asked for again 5 minutes before it expires, as Azure's SDKs do
ATTEMPTS = 3
BACKOFF_S = 0.5


@dataclass(kw_only=True)
class Creator:
    """Creates objects of one store, each only when its name is free."""

    build: Callable[[str, bytes], Request]  # (object key, content) → the request
    session: Any  # a requests.Session (google-auth's AuthorizedSession is one)
    timeouts: tuple[float, float]  # connect, read
    auth_errors: tuple[type[Exception], ...] = ()  # google-auth's, when it is used

    def create(self, key: str, data: bytes) -> bool:
        """True when the object was created; False when one of that name exists (left as it was)."""
        request = self.build(key, data)
        for attempt in range(1, ATTEMPTS + 1):
            try:
                response = self.session.request(request.method, request.url, headers=request.headers,
                                                data=request.body, timeout=self.timeouts)
            except requests.RequestException as exc:
                reason = f"{type(exc).__name__}: {scrubbed(str(exc))}"
            except self.auth_errors as exc:
                raise UploadFailed(f"Google credentials: {scrubbed(str(exc))}") from None
            else:
                verdict = answer(response.status_code)
                if verdict is not Answer.RETRY and verdict is not Answer.FAILED:
                    return verdict is Answer.CREATED
                reason = f"HTTP {response.status_code} {_error(response)}"
                if verdict is Answer.FAILED:
                    break
            if attempt < ATTEMPTS:
                time.sleep(BACKOFF_S * 2 ** (attempt - 1))
        raise UploadFailed(f"{request.method} {request.shown}: {reason}")


def conditional_creator(location: Location, options: StoreOptions, env: Mapping[str, str],
                        timeouts: tuple[float, float]) -> Creator | None:
    """The store's creator; None for a store other than GCS and Azure."""
    if location.scheme is Scheme.GS:
        endpoint, bucket = options.gcs_url(env), location.bucket

        def gcs(key: str, data: bytes) -> Request:
            return gcs_create(endpoint=endpoint, bucket=bucket, key=key, data=data, boundary=_boundary(data))

        session, auth_errors = _gcs_session(options.gcs_anonymous)
        return Creator(build=gcs, session=session, timeouts=timeouts, auth_errors=auth_errors)
    if location.scheme is Scheme.ABFS:
        account, container = location.account, location.bucket
        key, sas = options.azure_account_key, options.azure_sas_token

        def azure(blob: str, data: bytes) -> Request:
            url = azure_blob_url(endpoint=options.azure_endpoint, account=account, container=container, blob=blob)
            bearer = None if key or sas else AZURE_TOKENS.bearer()
            return azure_put_blob(url=url, account=account, data=data, now=datetime.datetime.now(datetime.UTC),
                                  auth=AzureAuth(account_key=key, sas_token=sas, bearer_token=bearer))

        return Creator(build=azure, session=requests.Session(), timeouts=timeouts)
    return None


def _gcs_session(anonymous: bool) -> tuple[Any, tuple[type[Exception], ...]]:
    """A plain session for anonymous requests (emulators, public buckets); else one that adds
    the bearer token of Google's application default credentials, as pyarrow's GCS client finds
    them (GOOGLE_APPLICATION_CREDENTIALS, gcloud's login, the metadata server)."""
    if anonymous:
        return requests.Session(), ()
    import google.auth
    import google.auth.exceptions
    from google.auth.transport.requests import AuthorizedSession

    try:
        credentials, _ = google.auth.default(scopes=[GCS_SCOPE])
    except google.auth.exceptions.GoogleAuthError as exc:
        raise UploadFailed(f"no Google credentials: {scrubbed(str(exc))}") from None
    return AuthorizedSession(credentials), (google.auth.exceptions.GoogleAuthError,)  # type: ignore[no-untyped-call]


class AzureTokens:
    """DefaultAzureCredential's access token for Azure Storage, one for the process (every store
    of every task uses it), asked for again `TOKEN_MARGIN_S` before it expires. Never shown."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._credential: Any = None
        self._token: tuple[str, float] | None = None  # the token, when it expires (epoch seconds)

    def __repr__(self) -> str:
        return "AzureTokens(…)"

    def bearer(self) -> str:
        with self._lock:
            if self._token is None or time.time() >= self._token[1] - TOKEN_MARGIN_S:
                self._token = self._fetch()
            return self._token[0]

    def _fetch(self) -> tuple[str, float]:
        from azure.core.exceptions import AzureError  # ClientAuthenticationError, CredentialUnavailableError

        try:
            if self._credential is None:
                # A failure is raised in one line naming the store; the chain's own warning says
                # it again over several lines, in every task's log.
                logging.getLogger("azure.identity").setLevel(logging.ERROR)
                self._credential = default_azure_credential()
            token = self._credential.get_token(AZURE_SCOPE)
        except (AzureError, ValueError) as exc:  # ValueError: a bad AZURE_TOKEN_CREDENTIALS
            raise UploadFailed(f"no Azure token (DefaultAzureCredential): {azure_failure(exc)}") from None
        return token.token, float(token.expires_on)


AZURE_TOKENS = AzureTokens()


def default_azure_credential() -> Any:
    """Python's DefaultAzureCredential cut to the chain of pyarrow's C++ one, so that reads and
    writes act as one identity: the environment's service principal (AZURE_TENANT_ID,
    AZURE_CLIENT_ID and AZURE_CLIENT_SECRET or AZURE_CLIENT_CERTIFICATE_PATH), workload identity
    (AZURE_FEDERATED_TOKEN_FILE), managed identity (App Service's IDENTITY_ENDPOINT, Azure Arc,
    Cloud Shell, the VM's IMDS), the Azure CLI's login; AZURE_TOKEN_CREDENTIALS (`prod`, `dev`,
    or one of those credentials' names) narrows both alike. Not Python's extras (VS Code,
    PowerShell, the Azure Developer CLI, the shared token cache, a broker), and the managed
    identity is the system-assigned one, as C++ asks for it (Python's would take AZURE_CLIENT_ID
    as a user-assigned identity's)."""
    from azure.identity import DefaultAzureCredential

    return DefaultAzureCredential(
        managed_identity_client_id=None, exclude_visual_studio_code_credential=True,
        exclude_powershell_credential=True, exclude_developer_cli_credential=True,
        exclude_shared_token_cache_credential=True, exclude_broker_credential=True,
    )


def azure_failure(exc: BaseException) -> str:
    """azure-identity's message in one line: the reasons of the credentials that were tried and
    failed (each a tab-indented line after "Attempted credentials:"), then the names of those
    that were not set up ("authentication unavailable", or no Azure CLI installed): the first
    are what to fix."""
    tried = [line.strip() for line in str(exc).splitlines() if line.startswith("\t")]
    if not tried:
        return scrubbed(str(exc), 400)
    no_cli = [line for line in tried if "not found on path" in line]
    unset = [line for line in tried if "authentication unavailable" in line] + no_cli
    # None failed outright: the last that says why it is unavailable (the IMDS's silence, say).
    failed = [line for line in tried if line not in unset] or [line for line in tried if line not in no_cli][-1:] \
        or tried[-1:]
    names = ", ".join(line.split(":", 1)[0] for line in unset if line not in failed)
    return scrubbed("; ".join(failed) + (f" (not set up: {names})" if names else ""), 400)


def _boundary(data: bytes) -> str:
    while True:
        boundary = f"reconciler-{secrets.token_hex(16)}"
        if boundary.encode() not in data:
            return boundary


def _error(response: Any) -> str:
    """The store's own code and message, in one line: Azure's `x-ms-error-code` and XML
    `<Message>`, or GCS's JSON `error.message`."""
    text = response.text or ""
    code = response.headers.get("x-ms-error-code") or response.reason or ""
    message = ""
    if "<Message>" in text:
        message = text.split("<Message>", 1)[1].split("</Message>", 1)[0].splitlines()[0]
    else:
        try:
            message = str(json.loads(text)["error"]["message"])
        except (ValueError, KeyError, TypeError):
            message = text
    return scrubbed(f"{code}: {message}" if message else code)


