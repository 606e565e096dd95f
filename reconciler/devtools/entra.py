"""A stand-in for Microsoft Entra ID's managed identity on loopback, and the TLS it needs, for
the tests of Azure without an account key or SAS token (DefaultAzureCredential).

- `make_tls(directory)`: a throwaway CA and a server certificate for 127.0.0.1, made with
  `cryptography`: Azurite serves OAuth only over HTTPS (`start_azurite(tls=…)`). A client
  trusts it through `Tls.env()`: SSL_CERT_FILE for pyarrow's Azure SDK (libcurl over OpenSSL,
  which reads it on each new connection) and azure-identity, REQUESTS_CA_BUNDLE for `requests`
  (our conditional creates).
- `IdentityEndpoint`: App Service's managed identity endpoint (`IDENTITY_ENDPOINT` and
  `IDENTITY_HEADER`, API version 2019-08-01), as azure-identity and the Azure SDK for C++ in
  pyarrow both ask it: `GET ?api-version=2019-08-01&resource=…` with the header
  `X-IDENTITY-HEADER`, answered `{"access_token", "expires_on", "resource", "token_type"}`.
  Azure's own endpoint (or IMDS) cannot be reached from here; this one mints an unsigned JWT
  with the claims Azurite's `--oauth basic` checks (issuer under https://sts.windows.net/,
  audience https://storage.azure.com, iat, nbf, exp; no signature check). The clients and the
  store are real.
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import json
import secrets
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Self

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

HOST = "127.0.0.1"
ISSUER = "https://sts.windows.net/72f988bf-0000-4000-8000-00000000cafe/"
AUDIENCE = "https://storage.azure.com"
TOKEN_LIFETIME_S = 3600
API_VERSION = "2019-08-01"


@dataclass(frozen=True, kw_only=True)
class Tls:
    """PEM files: the CA to trust, and the server's certificate and key."""

    ca: Path
    cert: Path
    key: Path

    def env(self) -> dict[str, str]:
        """The variables under which pyarrow, azure-identity and `requests` trust the CA."""
        return {"SSL_CERT_FILE": str(self.ca), "REQUESTS_CA_BUNDLE": str(self.ca)}


def make_tls(directory: Path) -> Tls:
    """A CA valid for a day and a certificate it signed for 127.0.0.1 (and localhost)."""
    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "connect-reconciler test CA")])

    def signed(subject: x509.Name, public: ec.EllipticCurvePublicKey, *extensions: tuple[x509.ExtensionType, bool]
               ) -> x509.Certificate:
        builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(ca_name).public_key(public)
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1)))
        for extension, critical in extensions:
            builder = builder.add_extension(extension, critical=critical)
        return builder.sign(ca_key, hashes.SHA256())

    ca = signed(ca_name, ca_key.public_key(), (x509.BasicConstraints(ca=True, path_length=0), True),
                (x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                               data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
                               encipher_only=False, decipher_only=False), True),
                (x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False))
    names = [x509.IPAddress(ipaddress.ip_address(HOST)), x509.DNSName("localhost")]
    cert = signed(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, HOST)]), key.public_key(),
                  (x509.SubjectAlternativeName(names), False), (x509.BasicConstraints(ca=False, path_length=None), True),
                  (x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), False),
                  (x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False))
    tls = Tls(ca=directory / "ca.pem", cert=directory / "server.pem", key=directory / "server-key.pem")
    tls.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    tls.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    tls.key.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    tls.key.chmod(0o600)
    return tls


def access_token(now: float, lifetime_s: int = TOKEN_LIFETIME_S) -> str:
    """An unsigned JWT (`alg: none`) for Azure Storage, as Azurite's basic OAuth check reads one."""
    claims = {"aud": AUDIENCE, "iss": ISSUER, "iat": int(now), "nbf": int(now) - 60, "exp": int(now) + lifetime_s,
              "oid": "00000000-0000-4000-8000-000000000001", "tid": ISSUER.rsplit("/", 2)[1],
              "uti": secrets.token_urlsafe(16)}  # each token differs
    return ".".join([_b64(json.dumps({"alg": "none", "typ": "JWT"})), _b64(json.dumps(claims)), ""])


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).rstrip(b"=").decode()


@dataclass(kw_only=True)
class IdentityEndpoint:
    """App Service's managed identity endpoint on a loopback port, served by a thread of this
    process until `stop()`. `issued`: the tokens given out (a test checks no log shows one)."""

    header: str = field(default_factory=lambda: secrets.token_hex(16), repr=False)
    issued: list[str] = field(default_factory=list, repr=False)
    _server: ThreadingHTTPServer | None = field(default=None, init=False, repr=False)

    def start(self) -> Self:
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
                if self.headers.get("X-IDENTITY-HEADER") != endpoint.header:
                    self._reply(401, {"error": "the X-IDENTITY-HEADER is missing or wrong"})
                elif query.get("api-version") != [API_VERSION] or not query.get("resource"):
                    self._reply(400, {"error": f"api-version {API_VERSION} and a resource are required"})
                else:
                    now = time.time()
                    endpoint.issued.append(access_token(now))
                    self._reply(200, {"access_token": endpoint.issued[-1], "resource": query["resource"][0],
                                      "expires_on": str(int(now) + TOKEN_LIFETIME_S), "token_type": "Bearer"})

            def _reply(self, status: int, body: dict[str, str]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the base's name)
                pass  # each request would print to stderr

        self._server = ThreadingHTTPServer((HOST, 0), Handler)
        threading.Thread(target=self._server.serve_forever, name="identity-endpoint", daemon=True).start()
        return self

    @property
    def url(self) -> str:
        assert self._server is not None, "not started"
        return f"http://{HOST}:{self._server.server_port}/msi/token"

    def env(self) -> dict[str, str]:
        """The variables under which azure-identity and pyarrow ask this endpoint for tokens."""
        return {"IDENTITY_ENDPOINT": self.url, "IDENTITY_HEADER": self.header}

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()
