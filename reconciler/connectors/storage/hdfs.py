"""HDFS for the storage layer, through hdfs-native: a client of HDFS's own RPC and data-transfer
protocols (Rust, on PyPI), so no JVM, no libhdfs and no Hadoop install; pyarrow's HDFS filesystem
needs all three. It reads the Hadoop configuration as Hadoop's client does (`HADOOP_CONF_DIR`,
else `$HADOOP_HOME/etc/hadoop`: `fs.defaultFS`, HA nameservices, Kerberos), and acts as
`HADOOP_USER_NAME` (else the OS user) under simple authentication.

The store sees it as a pyarrow filesystem (hdfs-native's fsspec filesystem behind pyarrow's
`FSSpecHandler`) for listing, reading, moving and deleting. Writing a file whole is HDFS's own
way: a file is visible, growing, while it is written, so it is written under a temporary name
and renamed, and HDFS's rename refuses an existing destination at the NameNode, atomically: a
zombie task's second write of a name is refused (`write_new` returns False) and the first file
stays. The temporary's name is new for each write: a writer killed mid-file leaves its lease on
the old temporary for a minute (HDFS's soft limit), which must not block the retry.
"""

from __future__ import annotations

import re
import uuid
from typing import TYPE_CHECKING, Any

from reconciler.connectors.storage.location import Location

if TYPE_CHECKING:
    import pyarrow.fs as pafs

TEMP_SUFFIX = ".tmp"
DEFAULT_PORT = 8020  # the NameNode's RPC port when an hdfs:// URI names a host only (Hadoop's default)
# hdfs-native reports a NameNode's refusal as RPCError("<Java class>", "<message>\n\tat …").
_RPC_ERROR = re.compile(r'^RPCError\("(?:[\w.$]+\.)?(?P<name>[\w$]+)", "(?P<message>.*?)(?:\\n|"\)|$)', re.S)


def filesystem(location: Location) -> tuple[pafs.FileSystem, Any]:
    """The location's cluster as a pyarrow filesystem, and hdfs-native's client under it (one
    connection for both). The authority is the URI's (host[:port], or an HA nameservice that
    the Hadoop configuration names); none: the configuration's `fs.defaultFS`."""
    import pyarrow.fs as pafs
    from hdfs_native.fsspec import HdfsFileSystem

    host, _, port = location.authority.partition(":")
    spec = HdfsFileSystem(host=host or None, port=int(port) if port else None, skip_instance_cache=True)
    return pafs.PyFileSystem(pafs.FSSpecHandler(spec)), spec.client


def address(location: Location) -> tuple[str, int] | None:
    """The NameNode's host and port when the URI names a host (a name without a port and without
    a dot may be an HA nameservice, which only the configuration resolves: None)."""
    host, _, port = location.authority.partition(":")
    if not host or (not port and "." not in host and host != "localhost"):
        return None
    return host, int(port) if port else DEFAULT_PORT


def temp_name(path: str) -> str:
    """A new temporary name beside `path`, hidden as the local disk's temporaries are."""
    directory, _, name = path.rpartition("/")
    return f"{directory}/.{name}.{uuid.uuid4().hex[:12]}{TEMP_SUFFIX}"


def write_new(client: Any, path: str, data: bytes) -> bool:
    """Write `data` as the file `path`, whole or not at all; False (and nothing changed) when a
    file of that name exists."""
    return _write(client, path, data, replace=False)


def replace(client: Any, path: str, data: bytes) -> None:
    """Write `data` as the file `path`, whole, replacing a file of that name."""
    _write(client, path, data, replace=True)


def _write(client: Any, path: str, data: bytes, *, replace: bool) -> bool:
    from hdfs_native import WriteOptions

    temp = temp_name(path)
    try:
        with client.create(temp, WriteOptions(overwrite=False, create_parent=True)) as out:
            out.write(data)
        client.rename(temp, path, replace)
    except FileExistsError:  # the rename, refused: `path` exists (and `replace` is False)
        client.delete(temp)
        return False
    except BaseException:
        _forget(client, temp)
        raise
    return True


def _forget(client: Any, temp: str) -> None:
    """Delete a temporary a failed write left; a cluster that cannot be reached leaves it to
    the next open's clean-up (the error being reported is the first one)."""
    try:
        client.delete(temp)
    except (OSError, RuntimeError):
        pass


def reason(exc: BaseException) -> str:
    """hdfs-native's message without the NameNode's Java stack: `InvalidPathException: …`."""
    text = str(exc)
    match = _RPC_ERROR.match(text)
    if match:
        message = match["message"].replace('\\"', '"').replace("\\\\", "\\")  # Rust's Debug escapes
        return f"{match['name']}: {message}"
    return (text.strip().splitlines() or [type(exc).__name__])[0]
