"""HDFS's pure parts in the storage layer: which NameNode is checked before the first call, the
temporaries' names, the NameNode's Java refusals in one line, and how messages name the store
(the cluster itself: tests/integration/stores/test_file_connectors_hdfs.py)."""

from __future__ import annotations

import re
import socket
import time

import pytest

from reconciler.connectors.storage import StorageUnavailable, open_store, parse_location
from reconciler.connectors.storage.hdfs import address, reason, temp_name


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("hdfs://namenode:9000/data", ("namenode", 9000)),
        ("hdfs://namenode.example.com/data", ("namenode.example.com", 8020)),  # Hadoop's default RPC port
        ("hdfs://localhost/data", ("localhost", 8020)),
        ("hdfs://nameservice1/data", None),  # an HA nameservice: the configuration resolves it
        ("hdfs:///data", None),  # fs.defaultFS
    ],
)
def test_the_namenode_checked_before_the_first_call(uri: str, expected: tuple[str, int] | None) -> None:
    assert address(parse_location(uri)) == expected


def test_a_temporary_is_hidden_beside_its_file_and_new_for_each_write() -> None:
    first, second = temp_name("/data/t/partition=0/t+0+1-2.txt"), temp_name("/data/t/partition=0/t+0+1-2.txt")
    assert re.fullmatch(r"/data/t/partition=0/\.t\+0\+1-2\.txt\.[0-9a-f]{12}\.tmp", first), first
    assert first != second  # a killed writer's lease on the old one must not block the retry


def test_a_namenode_refusal_is_one_line_without_the_java_stack() -> None:
    refusal = RuntimeError('RPCError("org.apache.hadoop.security.AccessControlException", "Permission denied: '
                           'user=bob, access=WRITE, inode=\\"/data\\"\\n\\tat org.apache.hadoop.hdfs.server.'
                           'namenode.FSPermissionChecker.check(FSPermissionChecker.java:506)\\n")')
    assert reason(refusal) == 'AccessControlException: Permission denied: user=bob, access=WRITE, inode="/data"'
    stacked = FileNotFoundError("Parent directory doesn't exist: /a\n\tat org.apache.hadoop.hdfs.X(X.java:1)")
    assert reason(stacked) == "Parent directory doesn't exist: /a"
    assert reason(OSError("Connection refused (os error 111)")) == "Connection refused (os error 111)"


def test_messages_name_the_namenode() -> None:
    assert open_store("hdfs://nn.example:9000/data", {}).where() == "HDFS namenode nn.example:9000"
    assert open_store("hdfs:///data", {}).where() == "HDFS namenode (fs.defaultFS)"


@pytest.mark.parametrize("call", ["is_dir", "size", "walk", "write_new"])
def test_a_namenode_nothing_listens_on_fails_the_first_call_at_once(call: str) -> None:
    """hdfs-native retries a refused connection for 3 minutes (measured: 181 s): whatever the
    store is asked first, the NameNode is connected to once before, and the refusal is one line."""
    with socket.socket() as sock:  # a port nothing listens on: bound, never listening
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        store = open_store(f"hdfs://127.0.0.1:{port}/data", {})
        started = time.monotonic()
        with pytest.raises(StorageUnavailable, match=f"cannot use HDFS namenode 127.0.0.1:{port}: cannot connect to "
                                                     f"127.0.0.1:{port}: .*refused"):
            if call == "write_new":
                store.write_new("a", lambda out: out.write(b"x"))
            else:
                getattr(store, call)(*(["a"] if call == "size" else []))
        assert time.monotonic() - started < 5
