"""Sending the conditional creates of `connectors.storage.conditional` to GCS and Azure.

`conditional_creator(location, options, env)` gives the `Creator` of a store, through the
credentials the store's pyarrow filesystem uses: on GCS none (`gcs.anonymous`) or Google's
application default credentials, by google-auth (which refreshes the bearer token); on Azure the
account key or the SAS token. None when the store has no conditional create this way: Azure with
neither (DefaultAzureCredential's tokens live in pyarrow's C++ SDK), and the stores that are not
GCS or Azure. A transient failure (no connection, a timeout, 408/429/5xx) is sent again, twice at
most: a create that succeeded before its answer was lost is then refused as existing, which the
caller treats as any other writer's file (the files are the truth).

I/O at the edge: `requests`, and google-auth only when credentials are needed; the store loads
this module on its first write to GCS or Azure (`validate` never does).
Failures are `UploadFailed` with a one-line reason that never holds a secret (no query string:
a SAS token is one).
"""

from __future__ import annotations

import datetime
import json
import secrets
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
    """The store's creator, or None when it cannot create conditionally (see the module's doc)."""
    if location.scheme is Scheme.GS:
        endpoint, bucket = options.gcs_url(env), location.bucket

        def gcs(key: str, data: bytes) -> Request:
            return gcs_create(endpoint=endpoint, bucket=bucket, key=key, data=data, boundary=_boundary(data))

        session, auth_errors = _gcs_session(options.gcs_anonymous)
        return Creator(build=gcs, session=session, timeouts=timeouts, auth_errors=auth_errors)
    if location.scheme is Scheme.ABFS and (options.azure_account_key or options.azure_sas_token):
        auth = AzureAuth(account_key=options.azure_account_key, sas_token=options.azure_sas_token)
        account, container = location.account, location.bucket

        def azure(key: str, data: bytes) -> Request:
            url = azure_blob_url(endpoint=options.azure_endpoint, account=account, container=container, blob=key)
            return azure_put_blob(url=url, account=account, data=data, auth=auth,
                                  now=datetime.datetime.now(datetime.UTC))

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


