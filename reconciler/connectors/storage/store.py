"""One storage layer for the file connectors: list, read, write-once, copy and delete files under
a `Location`, on a local disk, S3 (and S3-compatible stores), Google Cloud Storage, Azure Blob
Storage (ABFS) or HDFS, through pyarrow's filesystems (HDFS's from hdfs-native: `hdfs`).

Writing a file is the one step that differs by store, because it is what exactly once rests on
(docs/connectors.md#storage): a local disk writes a temporary file, fsyncs and renames it; HDFS
writes a temporary file and renames it, the NameNode refusing an existing name; an
object store gets one PUT of the final name — an object exists whole or not at all — made a
conditional create, since pyarrow can send no precondition: on S3 `If-None-Match: *` through
botocore, on GCS an upload with `ifGenerationMatch=0` and on Azure a Put Blob with
`If-None-Match: *` — signed with the account key, with a SAS token, or with
DefaultAzureCredential's bearer token (`conditional` builds those requests, `upload` sends
them). A second writer of the same name is refused (412, 409) rather than overwriting it:
`write_new` returns False. Every failure to reach
the store or to be let in is a `StorageUnavailable` naming the endpoint and bucket (container),
in one line, never a secret.
"""

from __future__ import annotations

import datetime
import io
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from reconciler import failpoints
from reconciler.connectors.api import ConnectorError
from reconciler.connectors.storage import hdfs
from reconciler.connectors.storage.conditional import UploadFailed, scrubbed
from reconciler.connectors.storage.local import TEMP_SUFFIX, Writer, fsync, write_local
from reconciler.connectors.storage.location import Location, Scheme
from reconciler.connectors.storage.options import StoreOptions
from reconciler.connectors.storage.reach import refusal
from reconciler.net import reachable

if TYPE_CHECKING:
    import pyarrow.fs as pafs

    from reconciler.connectors.storage.upload import Creator

CONNECT_TIMEOUT_S = 10.0
REQUEST_TIMEOUT_S = 60.0
GCS_RETRY_LIMIT_S = 15  # Google's client retries transient errors (an unreachable endpoint) for 15 minutes
GCS_URL = "https://storage.googleapis.com"


class StorageUnavailable(ConnectorError):
    """The store could not be reached, or refused the credentials or the request."""


@dataclass(kw_only=True)
class Store:
    """Files under one location. `rel` arguments are POSIX paths relative to the location."""

    location: Location
    options: StoreOptions = field(default_factory=StoreOptions)
    _fs: pafs.FileSystem | None = field(default=None, init=False, repr=False)
    _hdfs: Any = field(default=None, init=False, repr=False)  # hdfs-native's client, under `_fs`
    _s3: Any = field(default=None, init=False, repr=False)
    _bucket_seen: bool = field(default=False, init=False, repr=False)
    _creator: Creator | None = field(default=None, init=False, repr=False)
    _creator_made: bool = field(default=False, init=False, repr=False)

    # --- reading ----------------------------------------------------------------------------

    def names(self, rel_dir: str) -> list[str]:
        """The names of the files directly in a directory (none when it does not exist)."""
        return [Path(info.path).name for info in self._list(rel_dir, recursive=False) if info.is_file]

    def walk(self, rel_dir: str = "") -> dict[str, int]:
        """Every file under a directory, recursively: its path relative to the location → its size."""
        base = self.location.join()
        found = {}
        for info in self._list(rel_dir, recursive=True):
            if info.is_file:
                found[_relative(info.path, base)] = info.size
        return found

    def size(self, rel: str) -> int | None:
        """The size of a file; None when there is none."""
        import pyarrow.fs as pafs

        self._check_bucket()
        with self._reaching(rel):
            info = self.fs.get_file_info(self.location.join(rel))
        return info.size if info.type == pafs.FileType.File else None

    def read(self, rel: str, start: int = 0, length: int | None = None) -> bytes:
        """The bytes of a file from `start` (to its end, or `length` of them)."""
        self._check_bucket()
        with self._reaching(rel), self.fs.open_input_file(self.location.join(rel)) as handle:
            handle.seek(start)
            return bytes(handle.read() if length is None else handle.read(length))

    @contextmanager
    def open_input(self, rel: str) -> Iterator[BinaryIO]:
        """A file open for reading, with seek (object stores read ranges as asked)."""
        self._check_bucket()
        with self._reaching(rel):
            handle = self.fs.open_input_file(self.location.join(rel))
        with handle:
            yield handle

    def exists(self, rel: str) -> bool:
        return self.size(rel) is not None

    def is_dir(self, rel: str = "") -> bool:
        """Whether a directory is there (a disk, HDFS: an object store has none, only prefixes)."""
        import pyarrow.fs as pafs

        self._check_bucket()
        with self._reaching(rel):
            return bool(self.fs.get_file_info(self.location.join(rel)).type == pafs.FileType.Directory)

    # --- writing ----------------------------------------------------------------------------

    def write_new(self, rel: str, write: Writer) -> bool:
        """Write a file whole (`write(stream)` gives its content); False when a file of that name
        already exists on a store that can refuse the write (S3, GCS, Azure, HDFS), which it left as it was."""
        if self.location.scheme is Scheme.FILE:
            write_local(Path(self.location.join(rel)), write)
            return True
        buffer = io.BytesIO()
        write(buffer)
        if self.location.scheme is Scheme.S3:
            return self._put_if_absent(rel, buffer.getvalue())
        self._check_bucket()
        if self.location.scheme is Scheme.HDFS:
            with self._reaching(rel):
                return hdfs.write_new(self.hdfs_client, self.location.join(rel), buffer.getvalue())
        creator = self._conditional()
        assert creator is not None, self.location.scheme  # GCS and Azure have one
        try:
            return creator.create(self.location.key(rel), buffer.getvalue())
        except UploadFailed as exc:
            raise StorageUnavailable(f"cannot use {self.where()} ({self.location.uri(rel)}): {exc}",
                                     hint=_hint(self.location)) from None

    def copy(self, rel: str, to_rel: str) -> None:
        if self.location.scheme is Scheme.FILE:
            data = Path(self.location.join(rel)).read_bytes()
            write_local(Path(self.location.join(to_rel)), lambda out: out.write(data))
            return
        if self.location.scheme is Scheme.HDFS:  # hdfs-native's own copy writes a relative temporary
            data = self.read(rel)
            with self._reaching(to_rel):
                hdfs.replace(self.hdfs_client, self.location.join(to_rel), data)
            return
        with self._reaching(rel):
            self.fs.copy_file(self.location.join(rel), self.location.join(to_rel))

    def move(self, rel: str, to_rel: str) -> None:
        """Move a file: a rename on a disk, a copy then a delete on an object store (a crash in
        between leaves both; moving again completes it)."""
        if not self.location.object_store:
            with self._reaching(rel):
                target = self.location.join(to_rel)
                self.fs.create_dir(str(Path(target).parent), recursive=True)
                self.fs.move(self.location.join(rel), target)
            if self.location.scheme is Scheme.FILE:
                fsync(Path(self.location.join(to_rel)).parent)
                fsync(Path(self.location.join(rel)).parent)
            return
        self.copy(rel, to_rel)
        failpoints.hit(failpoints.Failpoint.STORAGE_AFTER_COPY)
        self.delete(rel)

    def delete(self, rel: str) -> None:
        with self._reaching(rel):
            self.fs.delete_file(self.location.join(rel))

    def remove_temp_files(self, rel_dir: str) -> None:
        """Delete what a writer that crashed between writing and renaming left (a disk or HDFS: an
        object store's file is one request, with no temporary)."""
        if self.location.object_store:
            return
        for name in self.names(rel_dir):
            if name.startswith(".") and name.endswith(TEMP_SUFFIX):
                self.delete(f"{rel_dir}/{name}")

    # --- the store --------------------------------------------------------------------------

    @property
    def fs(self) -> pafs.FileSystem:
        if self._fs is None:
            if self.location.scheme is Scheme.ABFS and not (self.options.azure_account_key or self.options.azure_sas_token):
                self._azure_token_first()
            if self.location.scheme is Scheme.HDFS:
                self._check_bucket()  # whichever call comes first: the NameNode reached, or one line now
                with self._reaching(""):
                    self._fs, self._hdfs = hdfs.filesystem(self.location)
            else:
                self._fs = _filesystem(self.location, self.options)
        return self._fs

    @property
    def hdfs_client(self) -> Any:
        """hdfs-native's client of an HDFS location (the one under `fs`)."""
        assert self.fs is not None and self._hdfs is not None, self.location.scheme
        return self._hdfs

    def _azure_token_first(self) -> None:
        """DefaultAzureCredential's token, by azure-identity, before pyarrow needs its own: pyarrow
        26's Azure filesystem aborts the process (the C++ SDK's AuthenticationException escapes to
        std::terminate) when its credential gets no token for a container's info or a file's
        opening. Asked of the same sources first, a missing or refused identity is one line."""
        from reconciler.connectors.storage.upload import AZURE_TOKENS

        try:
            AZURE_TOKENS.bearer()  # kept for the creates (one a process)
        except UploadFailed as exc:
            raise StorageUnavailable(f"cannot use {self.where()}: {exc}", hint=_hint(self.location)) from None

    def where(self) -> str:
        """The store as messages name it: endpoint and bucket (or host), never a credential."""
        scheme = self.location.scheme
        if scheme is Scheme.S3:
            return f"S3 endpoint {self.options.shown_endpoint(os.environ)}, bucket {self.location.bucket}"
        if scheme is Scheme.FILE:
            return f"directory {self.location.root}"
        if scheme is Scheme.GS:
            endpoint = self.options.gcs_url(os.environ) or "Google Cloud Storage"
            return f"GCS endpoint {endpoint}, bucket {self.location.bucket}"
        if scheme is Scheme.ABFS:
            account = self.location.account
            endpoint = self.options.azure_endpoint or f"https://{account}.blob.core.windows.net"
            return f"Azure endpoint {endpoint}, account {account}, container {self.location.bucket}"
        return f"HDFS namenode {self.location.authority or '(fs.defaultFS)'}"

    def _endpoint(self) -> str | None:
        """The object store's URL to connect to: one's own, or GCS's or the Azure account's;
        None for AWS's own S3 (its host depends on the region and the addressing)."""
        scheme = self.location.scheme
        if scheme is Scheme.S3:
            return self.options.endpoint or os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
        if scheme is Scheme.GS:
            return self.options.gcs_url(os.environ) or GCS_URL
        if scheme is Scheme.ABFS:
            return self.options.azure_endpoint or f"https://{self.location.account}.blob.core.windows.net"
        return None

    @contextmanager
    def _reaching(self, rel: str) -> Iterator[None]:
        """Library failures as one line naming the store (a missing file stays FileNotFoundError;
        Arrow's Azure filesystem raises its SDK's errors as ArrowException, "Unknown error")."""
        import pyarrow as pa

        # hdfs-native raises a NameNode's refusal it has no OSError for as a RuntimeError.
        failures = (OSError, pa.ArrowException, RuntimeError) if self.location.scheme is Scheme.HDFS \
            else (OSError, pa.ArrowException)
        try:
            yield
        except FileNotFoundError:
            raise
        except failures as exc:
            why = hdfs.reason(exc) if self.location.scheme is Scheme.HDFS else _reason(exc)
            raise StorageUnavailable(f"cannot use {self.where()} ({self.location.uri(rel)}): {scrubbed(why, 400)}",
                                     hint=_hint(self.location)) from None

    def _list(self, rel_dir: str, *, recursive: bool) -> list[pafs.FileInfo]:
        import pyarrow.fs as pafs

        self._check_bucket()
        with self._reaching(rel_dir):
            selector = pafs.FileSelector(self.location.join(rel_dir), recursive=recursive, allow_not_found=True)
            try:
                found: list[pafs.FileInfo] = self.fs.get_file_info(selector)
            except NotADirectoryError:
                return []
            return found

    def _check_bucket(self) -> None:
        """Before a store's first call, whichever it is (once per store): a missing bucket is an
        error, not an empty listing or a missing file; an endpoint or HDFS NameNode that cannot be
        connected to fails now, not after the SDK's retries (hdfs-native's: 3 minutes)."""
        import pyarrow.fs as pafs

        if self._bucket_seen or self.location.scheme is Scheme.FILE:
            return
        if self.location.scheme is Scheme.HDFS:
            namenode = hdfs.address(self.location)
            refused = reachable(*namenode, CONNECT_TIMEOUT_S) if namenode else None
            if namenode and refused:
                raise StorageUnavailable(f"cannot use {self.where()}: cannot connect to {namenode[0]}:{namenode[1]}: "
                                         f"{refused}", hint=_hint(self.location))
            self._bucket_seen = True
            return
        # A refused or unknown endpoint fails now, not after the SDK's retries (`reach`).
        endpoint = self._endpoint()
        refused = refusal(endpoint, CONNECT_TIMEOUT_S) if endpoint else None
        if refused:
            raise StorageUnavailable(f"cannot use {self.where()}: {refused}", hint=_hint(self.location))
        with self._reaching(""):
            info = self.fs.get_file_info(self.location.bucket)
        if info.type != pafs.FileType.Directory:
            raise StorageUnavailable(f"cannot use {self.where()}: the bucket does not exist", hint=_hint(self.location))
        self._bucket_seen = True

    def _put_if_absent(self, rel: str, data: bytes) -> bool:
        """One PUT of the final name, refused (412) when it exists: the only S3 call not through pyarrow."""
        import botocore.exceptions

        try:
            self._s3_client().put_object(Bucket=self.location.bucket, Key=self.location.key(rel), Body=data,
                                         IfNoneMatch="*")
        except botocore.exceptions.ClientError as exc:
            if exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") == 412:
                return False
            error = exc.response.get("Error", {})
            raise StorageUnavailable(f"cannot use {self.where()} ({self.location.uri(rel)}): "
                                     f"{error.get('Code')}: {error.get('Message')}", hint=_hint(self.location)) from None
        except botocore.exceptions.BotoCoreError as exc:
            raise StorageUnavailable(f"cannot use {self.where()} ({self.location.uri(rel)}): {exc}",
                                     hint=_hint(self.location)) from None
        return True

    def _conditional(self) -> Creator | None:
        """The store's conditional creates (GCS, Azure), made once; None for another store."""
        from reconciler.connectors.storage.upload import conditional_creator

        if not self._creator_made:
            try:
                self._creator = conditional_creator(self.location, self.options, os.environ,
                                                    (CONNECT_TIMEOUT_S, REQUEST_TIMEOUT_S))
            except UploadFailed as exc:
                raise StorageUnavailable(f"cannot use {self.where()}: {exc}", hint=_hint(self.location)) from None
            self._creator_made = True
        return self._creator

    def _s3_client(self) -> Any:
        if self._s3 is None:
            import botocore.config
            import botocore.session

            config = botocore.config.Config(
                connect_timeout=CONNECT_TIMEOUT_S, read_timeout=REQUEST_TIMEOUT_S,
                retries={"mode": "standard", "max_attempts": 3}, s3={"addressing_style": self.options.addressing},
            )
            self._s3 = botocore.session.get_session().create_client("s3", config=config, **self.options.botocore_args())
        return self._s3


def _filesystem(location: Location, options: StoreOptions) -> pafs.FileSystem:
    import pyarrow.fs as pafs

    if location.scheme is Scheme.FILE:
        return pafs.LocalFileSystem()
    if location.scheme is Scheme.S3:
        args = options.pyarrow_s3_args()
        # The AWS variables of an endpoint of one's own, which Arrow's SDK build does not read.
        endpoint = options.endpoint or os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
        if endpoint and "endpoint_override" not in args:
            args.update(endpoint_override=endpoint, scheme=endpoint.split(":", 1)[0])
        region = args.get("region") or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
        if region:
            args["region"] = region
        return pafs.S3FileSystem(connect_timeout=CONNECT_TIMEOUT_S, request_timeout=REQUEST_TIMEOUT_S, **args)
    try:
        if location.scheme is Scheme.GS:
            return pafs.GcsFileSystem(retry_time_limit=datetime.timedelta(seconds=GCS_RETRY_LIMIT_S),
                                      **options.pyarrow_gcs_args(os.environ))
        assert location.scheme is Scheme.ABFS, location.scheme  # HDFS's is `hdfs.filesystem`
        return pafs.AzureFileSystem(**options.pyarrow_azure_args(location.account))
    except (OSError, ValueError) as exc:
        raise StorageUnavailable(f"cannot use {location.text}: {_reason(exc)}", hint=_hint(location)) from None


def _reason(exc: BaseException) -> str:
    """The library's message in one line (Arrow's run to several, with the SDK's details), without
    the query of a URL in it (Arrow's Azure messages show the request's, SAS token included)."""
    return scrubbed(str(exc), 400)


def _hint(location: Location) -> str | None:
    if location.scheme is Scheme.S3:
        return ("check s3.endpoint / AWS_ENDPOINT_URL, that the bucket exists, and the credentials "
                "(s3.access.key.id and s3.secret.access.key, or the AWS chain)")
    if location.scheme is Scheme.GS:
        return ("check gcs.endpoint / STORAGE_EMULATOR_HOST, that the bucket exists, and the credentials "
                "(GOOGLE_APPLICATION_CREDENTIALS, or gcs.anonymous=true for an emulator)")
    if location.scheme is Scheme.ABFS:
        return ("check azblob.endpoint, the account in the URI, that the container exists, and the credentials "
                "(azblob.account.key or azblob.sas.token, or DefaultAzureCredential)")
    if location.scheme is Scheme.HDFS:
        return ("check the NameNode's host and RPC port in the URI (or fs.defaultFS in HADOOP_CONF_DIR), "
                "and the user (HADOOP_USER_NAME) or Kerberos ticket")
    return None


def _relative(path: str, base: str) -> str:
    return path[len(base):].lstrip("/") if path.startswith(base) else path
