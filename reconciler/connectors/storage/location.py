"""Where a file connector's `path` points: a local directory or a prefix in a store, parsed.

Pure: no I/O. `parse_location` accepts a plain path, `file:///abs`, `s3://bucket/prefix`,
`gs://bucket/prefix`, `abfs[s]://container@account.dfs.core.windows.net/prefix` and
`hdfs://namenode[:port]/path` (`hdfs:///path`: the Hadoop configuration's `fs.defaultFS`);
anything else that looks like a URI is refused with the reason (never taken for a local directory
named `s3:`). The rules: docs/connectors.md#storage.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath
from urllib.parse import unquote, urlsplit

# RFC 3986's scheme, followed by ':' — `s3:bucket` and `s3:/x` are refused, not made directories.
_SCHEME = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*):")
# S3's bucket naming rules (3-63 lowercase letters, digits, dots, hyphens; a letter or digit at each end).
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_GCS_BUCKET = re.compile(r"^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$")
_ABFS_AUTHORITY = re.compile(r"^(?P<container>[a-z0-9][a-z0-9-]{1,61}[a-z0-9])@(?P<account>[a-z0-9]{3,24})\.dfs\.core\.windows\.net$")
_HOST_PORT = re.compile(r"^[A-Za-z0-9.-]+(?::\d{1,5})?$")


class Scheme(enum.StrEnum):
    """The stores a `path` can name; FILE for a local (or mounted) directory."""

    FILE = "file"
    S3 = "s3"
    GS = "gs"
    ABFS = "abfs"
    HDFS = "hdfs"


SCHEMES = {"file": Scheme.FILE, "s3": Scheme.S3, "s3a": Scheme.S3, "gs": Scheme.GS, "abfs": Scheme.ABFS,
           "abfss": Scheme.ABFS, "hdfs": Scheme.HDFS}
OBJECT_STORES = frozenset({Scheme.S3, Scheme.GS, Scheme.ABFS})


class BadLocation(ValueError):
    """A `path` that names no place this project can write to (the message says why)."""


@dataclass(frozen=True, kw_only=True)
class Location:
    """A parsed `path`: `root` is the store's own path of the directory (local: absolute or as
    given; S3/GCS: `bucket/prefix`; ABFS: `container/prefix`; HDFS: `/path`), `authority` the
    bucket, container@account or namenode, `text` what the user wrote."""

    scheme: Scheme
    authority: str
    root: str
    text: str

    @property
    def object_store(self) -> bool:
        """Objects are written whole by one PUT and cannot be renamed (S3, GCS, Azure Blob)."""
        return self.scheme in OBJECT_STORES

    @property
    def bucket(self) -> str:
        """The bucket (or container) of an object store; '' elsewhere."""
        return self.root.split("/", 1)[0] if self.object_store else ""

    @property
    def account(self) -> str:
        """The storage account of an ABFS location (`container@account…`); '' elsewhere."""
        return self.authority.split("@", 1)[1].split(".", 1)[0] if self.scheme is Scheme.ABFS else ""

    def key(self, relative: str = "") -> str:
        """The object key of `relative` under the root (object stores)."""
        prefix = self.root.split("/", 1)[1] if "/" in self.root else ""
        return "/".join(part for part in (prefix, relative) if part)

    def join(self, *parts: str) -> str:
        """The store's path of a file or directory under the root."""
        return "/".join(part.strip("/") for part in (self.root, *parts) if part.strip("/")) if self.object_store \
            else str(PurePosixPath(self.root, *parts))

    def uri(self, *parts: str) -> str:
        """How messages name a file under the root: as the user wrote the root."""
        return "/".join([self.text.rstrip("/"), *parts]) if parts else self.text


def parse_location(text: str) -> Location:
    """The location `text` names, or BadLocation saying why it names none."""
    text = text.strip()
    if not text:
        raise BadLocation("is empty")
    match = _SCHEME.match(text)
    if match is None:
        return Location(scheme=Scheme.FILE, authority="", root=text, text=text)
    name = match["scheme"].lower()
    scheme = SCHEMES.get(name)
    if scheme is None or len(name) == 1:
        known = "s3://, gs://, abfs://, abfss://, hdfs://, file:// or a plain path"
        raise BadLocation(f"{text!r} is a URI of scheme {match['scheme']!r}, which is not a supported store ({known})")
    if not text[match.end():].startswith("//"):
        raise BadLocation(f"{text!r} is not a URI: write {name}://…")
    parts = urlsplit(text)
    if parts.query or parts.fragment:
        raise BadLocation(f"{text!r} has a query or fragment; a storage URI has neither")
    return _PARSERS[scheme](text, parts.netloc, unquote(parts.path))


_Parser = Callable[[str, str, str], "Location"]


def _file(text: str, authority: str, path: str) -> Location:
    if authority not in ("", "localhost"):
        raise BadLocation(f"{text!r} names host {authority!r}; a file:// URI is file:///absolute/path on this machine")
    if not path.startswith("/") or path == "/":
        raise BadLocation(f"{text!r} is not an absolute directory: write file:///absolute/path (or a plain path)")
    return Location(scheme=Scheme.FILE, authority="", root=path, text=text)


def _bucket_store(pattern: re.Pattern[str], what: str) -> _Parser:
    def parse(text: str, authority: str, path: str) -> Location:
        if not authority:
            raise BadLocation(f"{text!r} names no bucket: write {text.split(':', 1)[0]}://bucket/prefix")
        if not pattern.match(authority):
            raise BadLocation(f"{text!r}: {authority!r} is not a valid {what} bucket name")
        return Location(scheme=SCHEMES[text.split(":", 1)[0].lower()], authority=authority,
                        root="/".join(p for p in (authority, path.strip("/")) if p), text=text)

    return parse


def _abfs(text: str, authority: str, path: str) -> Location:
    match = _ABFS_AUTHORITY.match(authority)
    if match is None:
        raise BadLocation(f"{text!r}: write abfs://container@account.dfs.core.windows.net/prefix")
    root = "/".join(p for p in (match["container"], path.strip("/")) if p)
    return Location(scheme=Scheme.ABFS, authority=authority, root=root, text=text)


def _hdfs(text: str, authority: str, path: str) -> Location:
    """`hdfs://host:port/path`, `hdfs://host/path` (port 8020), `hdfs://nameservice/path` (HA, from
    the Hadoop configuration) or `hdfs:///path` (its `fs.defaultFS`)."""
    if authority and not _HOST_PORT.match(authority):
        raise BadLocation(f"{text!r}: {authority!r} is not a namenode: write hdfs://namenode:port/path")
    if not path.startswith("/") or path.strip("/") == "":
        raise BadLocation(f"{text!r} names no directory: write hdfs://namenode:port/path")
    return Location(scheme=Scheme.HDFS, authority=authority.lower(), root=path.rstrip("/"), text=text)


_PARSERS = {
    Scheme.FILE: _file,
    Scheme.S3: _bucket_store(_BUCKET, "S3"),
    Scheme.GS: _bucket_store(_GCS_BUCKET, "Google Cloud Storage"),
    Scheme.ABFS: _abfs,
    Scheme.HDFS: _hdfs,
}


def location_problem(value: object) -> str | None:
    """ConfigDef validator of a `path` key: why the value names no location (None when it does)."""
    if not isinstance(value, str):
        return None
    try:
        parse_location(value)
    except BadLocation as exc:
        return str(exc)
    return None
