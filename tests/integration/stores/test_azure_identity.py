"""parquet-sink on Azure with neither an account key nor a SAS token: DefaultAzureCredential,
here a managed identity, for pyarrow's reads (the Azure SDK for C++) and for our conditional
creates (azure-identity) alike. The store is Azurite over HTTPS taking bearer tokens
(`azurite_entra`); the identity is App Service's managed identity endpoint
(`IDENTITY_ENDPOINT`, `IDENTITY_HEADER`), served by `reconciler.devtools.entra` in this
process as a stand-in for Azure's (out of reach here): the clients, the tokens' path through
them and the store are real, only the token's issuer is ours (Azurite's `--oauth basic` checks
issuer, audience and lifetime, not a signature).

A real `reconciler run --once` lands every record once; a token that cannot be had (the identity
endpoint refusing) fails the store's use in one line naming the store and the credential, no
token anywhere. The zombie's refused create with a bearer token: test_file_sinks_gcs_azure.py.
"""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path

import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from azure_support import EntraAzurite
from crash_support import run_once
from reconciler.connectors.storage import StorageUnavailable, open_store
from reconciler.kafka.settings import KafkaSettings
from run_support import Pipeline, committed_everything, ids, produce_ids
from s3_support import in_dataset

pytestmark = pytest.mark.integration
COUNT = 300


def parquet_keys(server: EntraAzurite, prefix: str) -> tuple[Counter[bytes], list[str]]:
    """The keys of a parquet-sink dataset, and every file name, read with the account key."""
    fs, root = server.filesystem(), f"{server.container}/{prefix}"
    selector = pafs.FileSelector(root, recursive=True, allow_not_found=True)
    names = sorted(info.path[len(root) + 1:] for info in fs.get_file_info(selector) if info.is_file)
    found: Counter[bytes] = Counter()
    for relative in names:
        if relative.endswith(".parquet") and in_dataset(relative):
            found.update(pq.read_table(f"{root}/{relative}", columns=["key"], filesystem=fs).column("key").to_pylist())
    return found, names


def test_parquet_sink_with_a_managed_identity_lands_each_record_once(
    kafka_settings: KafkaSettings, tmp_path: Path, azurite_entra: EntraAzurite
) -> None:
    pipeline, base = Pipeline(kafka_settings, tmp_path), f"mi-{uuid.uuid4().hex[:10]}"
    topic = pipeline.topic("orders", 2)
    produce_ids(pipeline.settings, topic, range(COUNT))
    pipeline.connector("azure-mi", "parquet-sink", {"topics": topic, "path": azurite_entra.uri(base),
                                                    "flush.records": 200, **azurite_entra.keys()}, tasks_max=2)
    issued_before = len(azurite_entra.identity.issued)

    output = run_once(pipeline, None, env=azurite_entra.env())

    keys, names = parquet_keys(azurite_entra, base)
    assert keys == ids(COUNT)  # every record, none twice
    assert len(names) == 2 and not [name for name in names if name.endswith(".tmp")]  # a file a partition
    assert committed_everything(pipeline.settings, "connect-azure-mi", topic)
    issued = azurite_entra.identity.issued[issued_before:]
    assert issued  # pyarrow's reads and our creates asked the identity endpoint (once a process each)
    assert not [token for token in issued if token in output or token.split(".")[1] in output]


def test_a_token_that_cannot_be_had_fails_in_one_line_naming_the_store(
    azurite_entra: EntraAzurite, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The identity endpoint refusing (a wrong IDENTITY_HEADER: 401, not retried): at a store's
    first use (before pyarrow's own credential, which would abort the process), and at a create
    whose token must be asked for again (a token cache of its own, as when the process's token
    nears its expiry). Each a `StorageUnavailable` (what fails a task) in one line naming the
    endpoint, account and container, and the credential that failed."""
    from reconciler.connectors.storage import upload

    server, base = azurite_entra.server, f"no-{uuid.uuid4().hex[:10]}"
    where = f"cannot use Azure endpoint {server.endpoint}, account {server.account}, container {server.container}"
    name = "orders/partition=0/orders+0+0000000000-0000000099.parquet"
    monkeypatch.setenv("IDENTITY_HEADER", "not-the-header")
    with pytest.raises(StorageUnavailable) as first_use:
        open_store(azurite_entra.uri(base), azurite_entra.keys()).names("orders/partition=0")

    monkeypatch.setenv("IDENTITY_HEADER", azurite_entra.identity.header)
    store = open_store(azurite_entra.uri(base), azurite_entra.keys())
    assert store.names("orders/partition=0") == []
    monkeypatch.setenv("IDENTITY_HEADER", "not-the-header")
    monkeypatch.setattr(upload, "AZURE_TOKENS", upload.AzureTokens())
    with pytest.raises(StorageUnavailable) as create:
        store.write_new(name, lambda out: out.write(b"never"))

    assert str(first_use.value).startswith(f"{where}: no Azure token (DefaultAzureCredential): "
                                           "ManagedIdentityCredential: ")
    assert str(create.value).startswith(f"{where} (abfs://")
    assert "no Azure token (DefaultAzureCredential): ManagedIdentityCredential: " in str(create.value)
    for failure in (first_use.value, create.value):
        text = f"{failure} {failure.hint}"
        assert "\n" not in str(failure) and azurite_entra.identity.header not in text
        assert not [token for token in azurite_entra.identity.issued if token in text]
    fs = azurite_entra.filesystem()
    assert fs.get_file_info(f"{server.container}/{base}/{name}").type == pafs.FileType.NotFound
