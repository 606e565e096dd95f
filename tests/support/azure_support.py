"""Azure without an account key or SAS token in the tests (DefaultAzureCredential): Azurite over
HTTPS taking bearer tokens (`start_azurite(tls=…)`) and App Service's managed identity endpoint
that gives them (`reconciler.devtools.entra`, a stand-in for Entra ID, which is out of reach)."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow.fs as pafs

from reconciler.devtools.azurite import RunningAzurite
from reconciler.devtools.entra import IdentityEndpoint


@dataclass
class EntraAzurite:
    """The server, and the identity endpoint whose tokens it takes."""

    server: RunningAzurite
    identity: IdentityEndpoint

    @property
    def container(self) -> str:
        return self.server.container

    def uri(self, key: str = "") -> str:
        return self.server.uri(key)

    def keys(self) -> dict[str, str]:
        """The endpoint alone: no key, no SAS token, so the credential chain decides."""
        return {"azblob.endpoint": self.server.endpoint}

    def env(self) -> dict[str, str]:
        """What a process needs to reach the server as a managed identity: the identity endpoint's
        variables, and the test CA trusted (pyarrow, azure-identity, requests)."""
        assert self.server.tls is not None
        return {**self.server.tls.env(), **self.identity.env()}

    def filesystem(self) -> pafs.AzureFileSystem:
        """pyarrow's filesystem of the account, with its key: to read back (the CA trusted by `env()`)."""
        return self.server.filesystem()
