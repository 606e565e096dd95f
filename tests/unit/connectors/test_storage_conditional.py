"""The conditional creates on GCS and Azure, as requests: GCS's multipart upload with
`ifGenerationMatch=0` (read back by the standard library's MIME parser), Azure's Put Blob with
`If-None-Match: *`, its SharedKey string-to-sign (Azure's documented layout, written out) and
signature, the SAS token in the query, DefaultAzureCredential's bearer token (the chain
azure-identity builds, pyarrow's C++ one; the token kept and asked for again before it expires);
the statuses read; the sender's retries and its one-line failures without a secret (a session of
our own stands in for the network, a credential of our own for Entra ID). Against the real
servers: tests/integration/stores/test_file_sinks_gcs_azure.py and test_azure_identity.py."""

from __future__ import annotations

import base64
import datetime
import email
import email.policy
import hashlib
import hmac
import json
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

import pytest
import requests

from reconciler.connectors.storage import StoreOptions, parse_location
from reconciler.connectors.storage import upload as upload_module
from reconciler.connectors.storage.conditional import (
    Answer,
    AzureAuth,
    UploadFailed,
    answer,
    azure_blob_url,
    azure_put_blob,
    gcs_create,
    shared_key_signature,
    string_to_sign,
)
from reconciler.connectors.storage.upload import (
    AzureTokens,
    Creator,
    azure_failure,
    conditional_creator,
    default_azure_credential,
)

KEY = base64.b64encode(b"k" * 64).decode()
NOW = datetime.datetime(2026, 11, 29, 9, 30, 5, tzinfo=datetime.UTC)
TOKEN = "eyJ0eXAiOiJKV1QifQ.eyJhdWQiOiJodHRwczovL3N0b3JhZ2UuYXp1cmUuY29tIn0.c2lnbmF0dXJl"
SAS = "sv=2021-12-02&ss=b&srt=o&sp=rwdlac&se=2027-01-01T00%3A00%3A00Z&sig=c2VjcmV0LXNpZ25hdHVyZQ%3D%3D"


def test_a_gcs_create_is_a_multipart_upload_only_if_the_generation_is_0() -> None:
    data = b"line 1\nline 2\n"
    request = gcs_create(endpoint=None, bucket="archive", key="events/orders+0 1.txt", data=data, boundary="b0undary")
    url = urllib.parse.urlsplit(request.url)
    assert (request.method, url.scheme, url.netloc, url.path) == (
        "POST", "https", "storage.googleapis.com", "/upload/storage/v1/b/archive/o")
    assert urllib.parse.parse_qs(url.query) == {"uploadType": ["multipart"], "ifGenerationMatch": ["0"]}
    message = email.message_from_bytes(
        f"Content-Type: {request.headers['Content-Type']}\r\n\r\n".encode() + request.body, policy=email.policy.HTTP)
    metadata, content = message.iter_parts()
    assert json.loads(metadata.get_content()) == {
        "name": "events/orders+0 1.txt", "contentType": "application/octet-stream",
        "md5Hash": base64.b64encode(hashlib.md5(data).digest()).decode()}
    assert content.get_content_type() == "application/octet-stream"
    assert content.get_payload(decode=True) == data


def test_a_gcs_create_goes_to_the_emulator_given() -> None:
    request = gcs_create(endpoint="http://127.0.0.1:4443/", bucket="b_1", key="k", data=b"", boundary="x")
    assert request.url.startswith("http://127.0.0.1:4443/upload/storage/v1/b/b_1/o?")


def test_the_sender_picks_a_boundary_not_in_the_content() -> None:
    creator = conditional_creator(parse_location("gs://bucket/p"), StoreOptions(gcs_anonymous=True), {}, (1.0, 1.0))
    assert creator is not None
    request = creator.build("p/k", b"--reconciler-")
    boundary = request.headers["Content-Type"].split('boundary="', 1)[1].rstrip('"')
    assert boundary.startswith("reconciler-") and boundary.encode() not in b"--reconciler-"


def test_azure_blob_urls_name_the_account_in_the_host_or_first_in_the_path() -> None:
    assert azure_blob_url(endpoint=None, account="acct", container="box", blob="a b/c%d.txt") == \
        "https://acct.blob.core.windows.net/box/a%20b/c%25d.txt"
    assert azure_blob_url(endpoint="http://127.0.0.1:10000/", account="acct", container="box", blob="a/b") == \
        "http://127.0.0.1:10000/acct/box/a/b"


def test_the_shared_key_string_to_sign_has_azures_layout() -> None:
    headers = {"Content-Type": "application/octet-stream", "Content-MD5": "bWQ1", "If-None-Match": "*",
               "x-ms-version": "2021-12-02", "x-ms-date": "Sun, 29 Nov 2026 09:30:05 GMT",
               "x-ms-blob-type": "BlockBlob"}
    text = string_to_sign("PUT", "http://127.0.0.1:10000/acct/box/a/b.txt", headers, 11, "acct")
    assert text == ("PUT\n\n\n11\nbWQ1\napplication/octet-stream\n\n\n\n*\n\n\n"
                    "x-ms-blob-type:BlockBlob\nx-ms-date:Sun, 29 Nov 2026 09:30:05 GMT\nx-ms-version:2021-12-02\n"
                    "/acct/acct/box/a/b.txt")
    assert string_to_sign("PUT", "https://acct.blob.core.windows.net/box/e", {}, 0, "acct") == \
        "PUT" + "\n" * 12 + "/acct/box/e"  # an empty body: Content-Length is empty, not 0


def test_query_parameters_are_signed_lowercased_sorted_one_a_line() -> None:
    # Azure's own example: Get Container Metadata.
    text = string_to_sign("GET", "https://myaccount.blob.core.windows.net/mycontainer?restype=container"
                          "&comp=metadata&timeout=20", {}, 0, "myaccount")
    assert text.endswith("\n/myaccount/mycontainer\ncomp:metadata\nrestype:container\ntimeout:20")


def test_a_put_blob_signed_with_the_key_only_creates() -> None:
    url = "http://127.0.0.1:10000/acct/box/a/b.txt"
    request = azure_put_blob(url=url, account="acct", data=b"hello world", auth=AzureAuth(account_key=KEY), now=NOW)
    assert (request.method, request.url, request.body) == ("PUT", url, b"hello world")
    headers = request.headers
    assert (headers["If-None-Match"], headers["x-ms-blob-type"]) == ("*", "BlockBlob")
    assert headers["x-ms-date"] == "Sun, 29 Nov 2026 09:30:05 GMT"
    assert headers["Content-MD5"] == base64.b64encode(hashlib.md5(b"hello world").digest()).decode()
    expected = base64.b64encode(hmac.new(base64.b64decode(KEY), string_to_sign(
        "PUT", url, {k: v for k, v in headers.items() if k != "Authorization"}, 11, "acct").encode(),
        hashlib.sha256).digest()).decode()
    assert headers["Authorization"] == f"SharedKey acct:{expected}"
    assert shared_key_signature("PUT", url, headers, 11, "acct", KEY) == expected


@pytest.mark.parametrize("token", [SAS, f"?{SAS}"])
def test_a_put_blob_with_a_sas_token_carries_it_in_the_query_and_no_signature(token: str) -> None:
    request = azure_put_blob(url="https://acct.blob.core.windows.net/box/k", account="acct", data=b"x",
                             auth=AzureAuth(sas_token=token), now=NOW)
    assert request.url == f"https://acct.blob.core.windows.net/box/k?{SAS}"
    assert "Authorization" not in request.headers and request.headers["If-None-Match"] == "*"
    assert request.shown == "https://acct.blob.core.windows.net/box/k"
    assert "sig=" not in repr(request) and "sig=" not in repr(AzureAuth(sas_token=token))


def test_a_put_blob_with_a_bearer_token_carries_it_in_authorization_and_never_shows_it() -> None:
    url = "https://acct.blob.core.windows.net/box/k"
    request = azure_put_blob(url=url, account="acct", data=b"x", auth=AzureAuth(bearer_token=TOKEN), now=NOW)
    assert request.url == url and request.headers["Authorization"] == f"Bearer {TOKEN}"
    assert request.headers["x-ms-version"] >= "2017-11-09"  # the first version that takes a bearer token
    assert request.headers["If-None-Match"] == "*"
    assert TOKEN not in repr(request) and TOKEN not in repr(AzureAuth(bearer_token=TOKEN))


def test_a_key_is_never_in_a_repr() -> None:
    request = azure_put_blob(url="https://acct.blob.core.windows.net/box/k", account="acct", data=b"x",
                             auth=AzureAuth(account_key=KEY), now=NOW)
    assert KEY not in repr(AzureAuth(account_key=KEY))
    assert "SharedKey" not in repr(request)


@pytest.mark.parametrize(("status", "expected"), [
    (200, Answer.CREATED), (201, Answer.CREATED), (412, Answer.EXISTS), (409, Answer.EXISTS),
    (429, Answer.RETRY), (503, Answer.RETRY), (408, Answer.RETRY), (403, Answer.FAILED), (404, Answer.FAILED),
])
def test_statuses_read(status: int, expected: Answer) -> None:
    assert answer(status) is expected


# --- the sender -----------------------------------------------------------------------------


@dataclass
class Replies:
    """A session answering from a list: an int is a status (with `body`), an exception is raised."""

    replies: list[int | Exception]
    body: str = ""
    error_code: str | None = None
    sent: list[tuple[str, str]] = field(default_factory=list)

    def request(self, method: str, url: str, **_: Any) -> requests.Response:
        self.sent.append((method, url))
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        response = requests.Response()
        response.status_code, response._content = reply, self.body.encode()
        if self.error_code:
            response.headers["x-ms-error-code"] = self.error_code
        return response


def sas_creator(session: Replies) -> Creator:
    options = StoreOptions(azure_endpoint="http://127.0.0.1:10000", azure_sas_token=SAS)
    creator = conditional_creator(parse_location("abfs://box@acct.dfs.core.windows.net/p"), options, {}, (1.0, 1.0))
    assert creator is not None
    creator.session = session
    return creator


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(upload_module, "BACKOFF_S", 0.0)


def test_created_refused_and_transient_answers() -> None:
    assert sas_creator(Replies([201])).create("p/a", b"x") is True
    assert sas_creator(Replies([409])).create("p/a", b"x") is False
    busy = Replies([503, requests.ConnectionError("reset"), 201])
    assert sas_creator(busy).create("p/a", b"x") is True
    assert busy.sent == [("PUT", f"http://127.0.0.1:10000/acct/box/p/a?{SAS}")] * 3


def test_a_refusal_is_one_line_with_the_stores_code_and_message() -> None:
    body = ('<?xml version="1.0" encoding="utf-8"?><Error><Code>AuthorizationFailure</Code><Message>This request '
            'is not authorized.\nRequestId:1</Message></Error>')
    session = Replies([403], body=body, error_code="AuthorizationFailure")
    with pytest.raises(UploadFailed) as failure:
        sas_creator(session).create("p/a", b"x")
    assert str(failure.value) == ("PUT http://127.0.0.1:10000/acct/box/p/a: HTTP 403 AuthorizationFailure: "
                                  "This request is not authorized.")
    assert len(session.sent) == 1  # not retried


def test_a_store_out_of_reach_fails_after_three_tries_without_the_sas_token() -> None:
    refused = requests.ConnectionError(f"Max retries exceeded with url: /acct/box/p/a?{SAS} (Caused by refused)")
    session = Replies([refused] * 3)
    with pytest.raises(UploadFailed) as failure:
        sas_creator(session).create("p/a", b"x")
    assert len(session.sent) == 3
    assert "sig=" not in str(failure.value) and "\n" not in str(failure.value)
    assert str(failure.value).startswith("PUT http://127.0.0.1:10000/acct/box/p/a: ConnectionError: ")


def test_a_gcs_error_message_is_read_from_its_json() -> None:
    session = Replies([400], body=json.dumps({"error": {"code": 400, "message": "Invalid bucket name"}}))
    creator = conditional_creator(parse_location("gs://bucket/p"), StoreOptions(gcs_anonymous=True), {}, (1.0, 1.0))
    assert creator is not None
    creator.session = session
    with pytest.raises(UploadFailed, match=r"HTTP 400 .*Invalid bucket name$"):
        creator.create("p/a", b"x")


def test_which_stores_create_conditionally() -> None:
    azure = parse_location("abfs://box@acct.dfs.core.windows.net/p")
    for options in (StoreOptions(), StoreOptions(azure_account_key=KEY), StoreOptions(azure_sas_token=SAS)):
        assert conditional_creator(azure, options, {}, (1.0, 1.0)) is not None  # no token asked for yet
    assert conditional_creator(parse_location("s3://bucket/p"), StoreOptions(), {}, (1.0, 1.0)) is None


def test_gcs_without_credentials_fails_in_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    with pytest.raises(UploadFailed, match=r"^no Google credentials: .*missing\.json"):
        conditional_creator(parse_location("gs://bucket/p"), StoreOptions(), {}, (1.0, 1.0))


def test_gcs_with_default_credentials_sends_through_google_auths_session(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    from google.auth.transport.requests import AuthorizedSession

    user = {"type": "authorized_user", "client_id": "id.apps.googleusercontent.com", "client_secret": "s3cret",
            "refresh_token": "r3fresh"}  # what `gcloud auth application-default login` leaves
    (tmp_path / "adc.json").write_text(json.dumps(user))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "adc.json"))
    creator = conditional_creator(parse_location("gs://bucket/p"), StoreOptions(), {}, (1.0, 1.0))
    assert creator is not None and isinstance(creator.session, AuthorizedSession)
    assert creator.session.credentials.refresh_token == "r3fresh" and creator.auth_errors


# --- Azure's bearer token -------------------------------------------------------------------


@dataclass
class Credential:
    """Stands in for DefaultAzureCredential: hands out tokens expiring at the times given."""

    expiries: list[float]
    asked: list[tuple[str, ...]] = field(default_factory=list)

    def get_token(self, *scopes: str) -> Any:
        from azure.core.credentials import AccessToken

        self.asked.append(scopes)
        return AccessToken(f"token-{len(self.asked)}", int(self.expiries.pop(0)))


def test_the_token_is_kept_until_5_minutes_before_it_expires(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1_000_000.0]
    monkeypatch.setattr(upload_module.time, "time", lambda: clock[0])
    tokens, credential = AzureTokens(), Credential([clock[0] + 3600, clock[0] + 7200])
    tokens._credential = credential
    assert tokens.bearer() == "token-1" and tokens.bearer() == "token-1"
    clock[0] += 3600 - 301
    assert tokens.bearer() == "token-1"
    clock[0] += 2  # within 5 minutes of its expiry
    assert tokens.bearer() == "token-2"
    assert credential.asked == [("https://storage.azure.com/.default",)] * 2
    assert "token" not in repr(tokens)


def test_a_bearer_creator_asks_the_processs_tokens_for_each_request(monkeypatch: pytest.MonkeyPatch) -> None:
    tokens = AzureTokens()
    tokens._credential = Credential([4_000_000_000.0])
    monkeypatch.setattr(upload_module, "AZURE_TOKENS", tokens)
    creator = conditional_creator(parse_location("abfs://box@acct.dfs.core.windows.net/p"),
                                  StoreOptions(azure_endpoint="https://127.0.0.1:10000"), {}, (1.0, 1.0))
    assert creator is not None
    request = creator.build("p/a", b"x")
    assert request.url == "https://127.0.0.1:10000/acct/box/p/a"
    assert request.headers["Authorization"] == "Bearer token-1" and "token-1" not in repr(request)


def test_no_token_is_one_line_naming_the_credential_that_failed() -> None:
    from azure.core.exceptions import ClientAuthenticationError

    class Refusing:
        def get_token(self, *scopes: str) -> Any:  # azure-identity's message, as DefaultAzureCredential words it
            raise ClientAuthenticationError(message=(
                "DefaultAzureCredential failed to retrieve a token from the included credentials.\n"
                "Attempted credentials:\n\tEnvironmentCredential: EnvironmentCredential authentication unavailable. "
                "Environment variables are not fully configured.\nVisit https://aka.ms/x to troubleshoot this issue."
                "\n\tManagedIdentityCredential: HTTPConnection(host='127.0.0.1', port=9): Failed to establish a new "
                "connection: [Errno 111] Connection refused\nTo mitigate this issue, please refer to https://aka.ms/y."))

    tokens = AzureTokens()
    tokens._credential = Refusing()
    with pytest.raises(UploadFailed) as failure:
        tokens.bearer()
    assert str(failure.value) == (
        "no Azure token (DefaultAzureCredential): ManagedIdentityCredential: HTTPConnection(host='127.0.0.1', "
        "port=9): Failed to establish a new connection: [Errno 111] Connection refused (not set up: "
        "EnvironmentCredential)")
    assert azure_failure(ValueError("one\nline")) == "one line"
    nothing = ("DefaultAzureCredential failed to retrieve a token from the included credentials.\nAttempted "
               "credentials:\n\tEnvironmentCredential: EnvironmentCredential authentication unavailable. Environment "
               "variables are not fully configured.\n\tManagedIdentityCredential: ManagedIdentityCredential "
               "authentication unavailable, no response from the IMDS endpoint.\n")
    assert azure_failure(ValueError(nothing)) == ("ManagedIdentityCredential: ManagedIdentityCredential "
                                                  "authentication unavailable, no response from the IMDS endpoint. "
                                                  "(not set up: EnvironmentCredential)")
    no_cli = nothing.replace("endpoint.\n", "endpoint.\n\tAzureCliCredential: Azure CLI not found on path\n")
    assert azure_failure(ValueError(no_cli)).endswith("(not set up: EnvironmentCredential, AzureCliCredential)")


@pytest.mark.parametrize(("chosen", "chain"), [
    ("", ["EnvironmentCredential", "WorkloadIdentityCredential", "ManagedIdentityCredential", "AzureCliCredential"]),
    ("prod", ["EnvironmentCredential", "WorkloadIdentityCredential", "ManagedIdentityCredential"]),
    ("dev", ["AzureCliCredential"]),
    ("ManagedIdentityCredential", ["ManagedIdentityCredential"]),
])
def test_the_credential_chain_is_pyarrows(chosen: str, chain: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The C++ SDK's DefaultAzureCredential (pyarrow's reads): environment, workload identity,
    managed identity (system-assigned, AZURE_CLIENT_ID not taken for it), the Azure CLI; no more."""
    monkeypatch.setenv("AZURE_TOKEN_CREDENTIALS", chosen)
    client_id = "00000000-0000-0000-0000-0000000000c1"
    monkeypatch.setenv("AZURE_CLIENT_ID", client_id)
    credential = default_azure_credential()
    names = [getattr(each, "_credential_name", type(each).__name__) for each in credential.credentials]
    assert names == chain
    for each in credential.credentials:
        if type(each).__name__ == "ManagedIdentityCredential":
            assert client_id not in repr(vars(each._credential))  # Python's own DefaultAzureCredential's is
