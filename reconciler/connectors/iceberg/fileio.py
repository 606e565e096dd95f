"""iceberg-sink's FileIO: pyiceberg 0.12's `PyArrowFileIO` with the two things it lacks that
Java's ADLSFileIO and GCSFileIO do (catalog.py names it in `py-io-impl`; pyiceberg loads it by
that name, so nothing else imports this module, nor pyiceberg's pyarrow, at its top).

- ADLS paths: pyiceberg 0.12 hands pyarrow `container@account.dfs.core.windows.net/key` for
  `abfs[s]://container@account.dfs.core.windows.net/key`, whose first segment pyarrow takes as
  the container (a 400: invalid name); pyarrow wants `container/key` (fixed upstream after 0.12,
  apache/iceberg-python#3884). Without this class pyiceberg picks fsspec for abfs://, which
  needs adlfs (not installed here).
- `gcs.no-auth=true` (Java's key for emulators): pyiceberg's GcsFileSystem is never anonymous,
  and without credentials pyarrow refuses to send a request.
"""

from __future__ import annotations

from typing import Any

from pyarrow.fs import FileSystem, GcsFileSystem
from pyiceberg.io import GCS_DEFAULT_LOCATION, GCS_SERVICE_HOST
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.typedef import EMPTY_DICT, Properties

from reconciler.connectors.iceberg.storage import NO_AUTH
from reconciler.connectors.storage.options import scheme_and_authority

ADLS_SCHEMES = frozenset({"abfs", "abfss", "wasb", "wasbs"})


class ReconcilerFileIO(PyArrowFileIO):
    @staticmethod
    def parse_location(location: str, properties: Properties = EMPTY_DICT) -> tuple[str, str, str]:
        """pyiceberg's, with an ADLS location's path as pyarrow's Azure filesystem reads it."""
        scheme, netloc, path = PyArrowFileIO.parse_location(location, properties)
        container, at, _ = netloc.partition("@")
        if scheme in ADLS_SCHEMES and at and path.startswith(netloc):
            return scheme, netloc, container + path[len(netloc):]
        return scheme, netloc, path

    def _initialize_gcs_fs(self) -> FileSystem:
        if self.properties.get(NO_AUTH, "").strip().lower() != "true":
            return super()._initialize_gcs_fs()
        args: dict[str, Any] = {"anonymous": True}
        if location := self.properties.get(GCS_DEFAULT_LOCATION):
            args["default_bucket_location"] = location
        if endpoint := self.properties.get(GCS_SERVICE_HOST):
            args["scheme"], args["endpoint_override"] = scheme_and_authority(endpoint)
        return GcsFileSystem(**args)
