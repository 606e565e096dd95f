"""The file sinks on Google Cloud Storage (fake-gcs-server, `gcs_server`) and Azure Blob Storage
(Azurite, `azurite`), real HTTP APIs on loopback: file-sink on gs:// and parquet-sink on abfs://
SIGKILLed mid-batch in one `reconciler run --once`, then converging in an in-process tick (0 rows
lost, 0 twice, read back by pyarrow's GCS and Azure filesystems); a second write of a file's name
(a zombie task's) refused by each store's conditional create — GCS, Azure with the account key,
Azure with a SAS token, Azure with a managed identity's bearer token (`azurite_entra`) — the
first file left as it was, and a zombie parquet-sink task that lost that race taking the file
there as written (nothing doubled); an unreachable endpoint fails each
task in one line naming the endpoint and the bucket or container, without the account key, and
so does Azure without key or SAS token where DefaultAzureCredential finds no identity (the
session's Spark workers have none: test_azure_identity.py is where one is given).
"""

from __future__ import annotations

import datetime
import uuid
from collections import Counter

import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from azure_support import EntraAzurite
from crash_support import run_once
from reconciler.connectors.storage import open_store
from reconciler.devtools.azurite import RunningAzurite
from reconciler.devtools.broker import free_port
from reconciler.devtools.gcs import RunningGcs
from range_sink_support import zombie_loses_the_race, zombie_race
from run_support import Pipeline, big_batches, committed_everything, ids, produce_ids
from s3_support import in_dataset

__all__ = ["big_batches"]  # the fixture

pytestmark = pytest.mark.integration
COUNT = 3000


def files(fs: pafs.FileSystem, root: str) -> dict[str, bytes]:
    """Every file under `root` (relative path → content), as the store's own reader lists it."""
    found = {}
    for info in fs.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=True)):
        if info.is_file:
            with fs.open_input_file(info.path) as handle:
                found[info.path[len(root) + 1:]] = handle.read()
    return found


def gcs_filesystem(server: RunningGcs) -> pafs.GcsFileSystem:
    return pafs.GcsFileSystem(anonymous=True, scheme="http", endpoint_override=f"{server.host}:{server.port}",
                              retry_time_limit=datetime.timedelta(seconds=5))


def gcs_ids(server: RunningGcs, prefix: str) -> Counter[bytes]:
    found: Counter[bytes] = Counter()
    for relative, body in files(gcs_filesystem(server), f"{server.bucket}/{prefix}").items():
        if relative.endswith(".txt") and in_dataset(relative):
            found.update(body.splitlines())  # each value is its id
    return found


def azure_keys(server: RunningAzurite, prefix: str) -> tuple[Counter[bytes], list[str]]:
    """The keys in a parquet-sink dataset on Azure, and every file name (temporaries too)."""
    fs, root = server.filesystem(), f"{server.container}/{prefix}"
    names = sorted(files(fs, root))
    found: Counter[bytes] = Counter()
    for relative in names:
        if relative.endswith(".parquet") and in_dataset(relative):
            found.update(pq.read_table(f"{root}/{relative}", columns=["key"], filesystem=fs).column("key").to_pylist())
    return found, names


@pytest.mark.timeout(900)  # the killed run starts a Spark of its own
def test_sinks_on_gcs_and_azure_killed_mid_write_converge(
    big_batches: Pipeline, gcs_server: RunningGcs, azurite: RunningAzurite
) -> None:
    pipeline, base = big_batches, f"t-{uuid.uuid4().hex[:10]}"
    topic = pipeline.topic("orders", 2)
    produce_ids(pipeline.settings, topic, range(COUNT))
    pipeline.connector("gcs-lines", "file-sink", {"topics": topic, "path": gcs_server.uri(base),
                                                  "flush.records": 500, **gcs_server.keys()}, tasks_max=2)
    pipeline.connector("azure-archive", "parquet-sink", {"topics": topic, "path": azurite.uri(base),
                                                         "flush.records": 500, **azurite.keys()}, tasks_max=2)

    run_once(pipeline, "sink.mid_write")  # a partition's first file written, more to read
    # Each store on its own: the two connectors read the same ids, and both may have written their
    # first files before the kill landed (then an id is in each store once, never twice in one).
    in_gcs, in_azure = gcs_ids(gcs_server, base), azure_keys(azurite, base)[0]
    assert 0 < sum(in_gcs.values()) + sum(in_azure.values()) < 2 * COUNT
    assert set(in_gcs.values()) <= {1} and set(in_azure.values()) <= {1}

    pipeline.tick()  # recovery: the listing is the truth, nothing written twice
    assert gcs_ids(gcs_server, base) == ids(COUNT)
    keys, names = azure_keys(azurite, base)
    assert keys == ids(COUNT)
    assert not [name for name in names if name.endswith(".tmp")]  # one Put Blob each, no temporaries
    for group in ("connect-gcs-lines", "connect-azure-archive"):
        assert committed_everything(pipeline.settings, group, topic)


def test_a_second_write_of_a_name_is_refused_and_the_first_file_stays(
    gcs_server: RunningGcs, azurite: RunningAzurite, azurite_entra: EntraAzurite
) -> None:
    """What a zombie task does when its replacement wrote the range first: its write of the same
    name returns False, and each store's own reader still reads the first content."""
    base, name = f"c-{uuid.uuid4().hex[:10]}", "orders/partition=0/orders+0+0000000000-0000000499.txt"
    stores = {
        "gcs": (open_store(gcs_server.uri(base), gcs_server.keys()), gcs_filesystem(gcs_server), gcs_server.bucket),
        "azure key": (open_store(azurite.uri(f"{base}/key"), azurite.keys()), azurite.filesystem(), azurite.container),
        "azure sas": (open_store(azurite.uri(f"{base}/sas"), {"azblob.endpoint": azurite.endpoint,
                                                             "azblob.sas.token": azurite.sas_token()}),
                      azurite.filesystem(), azurite.container),
        "azure bearer": (open_store(azurite_entra.uri(base), azurite_entra.keys()), azurite_entra.filesystem(),
                         azurite_entra.container),
    }
    for what, (store, fs, bucket) in stores.items():
        assert store.write_new(name, lambda out: out.write(b"newer\n")) is True, what
        assert store.write_new(name, lambda out: out.write(b"zombie's\n")) is False, what
        assert files(fs, f"{bucket}/{store.location.key()}") == {name: b"newer\n"}, what


@pytest.mark.parametrize("store", ["gcs_server", "azurite", "azurite_entra"])
def test_a_zombie_task_writing_the_same_range_is_refused_and_nothing_doubles(
    store: str, request: pytest.FixtureRequest
) -> None:
    server = request.getfixturevalue(store)
    base = f"z-{uuid.uuid4().hex[:10]}"
    if isinstance(server, RunningGcs):
        fs, root = gcs_filesystem(server), f"{server.bucket}/{base}"
    else:  # Azure with its key, or with no key (azurite_entra: DefaultAzureCredential's token)
        fs, root = server.filesystem(), f"{server.container}/{base}"
    config = {"name": "archive", "topics": "orders", "path": server.uri(base), "flush.records": "1000",
              **server.keys()}
    zombie = zombie_race(config)  # both read 0-99; the current task wrote its file first
    # The zombie's create of the same name is refused: it re-lists and keeps the current file.
    zombie_loses_the_race(zombie, lambda: files(fs, root), lambda: _parquet_keys(fs, root))


def _parquet_keys(fs: pafs.FileSystem, root: str) -> Counter[bytes]:
    found: Counter[bytes] = Counter()
    for relative in files(fs, root):
        found.update(pq.read_table(f"{root}/{relative}", columns=["key"], filesystem=fs).column("key").to_pylist())
    return found


def test_an_unreachable_gcs_or_azure_endpoint_fails_the_task_in_one_line(
    big_batches: Pipeline, gcs_server: RunningGcs, azurite: RunningAzurite
) -> None:
    pipeline = big_batches
    topic = pipeline.topic("orders", 1)
    produce_ids(pipeline.settings, topic, range(20))
    gcs_nowhere, azure_nowhere = f"http://127.0.0.1:{free_port()}", f"http://127.0.0.1:{free_port()}"
    secret = azurite.account_key
    pipeline.connector("gcs-away", "file-sink", {"topics": topic, "path": gcs_server.uri("away"),
                                                 **gcs_server.keys(), "gcs.endpoint": gcs_nowhere})
    pipeline.connector("azure-away", "parquet-sink", {"topics": topic, "path": azurite.uri("away"),
                                                      **azurite.keys(), "azblob.endpoint": azure_nowhere})
    pipeline.connector("azure-nobody", "parquet-sink", {"topics": topic, "path": azurite.uri("nobody"),
                                                        "azblob.endpoint": azurite.endpoint})
    pipeline.tick()
    expected = {"gcs-away": f"cannot use GCS endpoint {gcs_nowhere}, bucket {gcs_server.bucket}",
                "azure-away": f"cannot use Azure endpoint {azure_nowhere}, account {azurite.account}, "
                              f"container {azurite.container}",
                "azure-nobody": f"cannot use Azure endpoint {azurite.endpoint}, account {azurite.account}, "
                                f"container {azurite.container}: no Azure token (DefaultAzureCredential): "}
    for name, words in expected.items():
        task = pipeline.state(name).task_statuses[0]
        assert task.state.value == "FAILED" and task.trace is not None
        last = task.trace.strip().splitlines()[-1]
        assert f"StorageUnavailable: {words}" in last, task.trace
        assert secret not in task.trace
        assert not committed_everything(pipeline.settings, f"connect-{name}", topic)
