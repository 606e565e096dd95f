"""Storage for the file connectors: where `path` points (`location`: plain paths and storage
URIs, parsed and checked), how to reach an object store (`options`: the `s3.*` keys as one typed
value, mapped for pyarrow, botocore, delta-rs and pyiceberg), the files themselves (`store`:
list, read, write-once, move aside, on a disk, S3, GCS or ABFS through pyarrow, HDFS through
hdfs-native: `hdfs`), and the
writes pyarrow cannot make conditional on GCS and Azure (`conditional`: the requests, pure —
GCS's `ifGenerationMatch=0` upload, Azure's `If-None-Match: *` Put Blob and its SharedKey
signature; `upload`: sending them, with google-auth's and azure-identity's default credentials).

`open_store(path, config)` is what a connector calls. The rules: docs/connectors.md#storage.
May import `connectors.api` and `configdef`; pyarrow, botocore and `upload` (requests,
google-auth, azure-identity) only inside functions (the connectors' checks run in `validate`,
which loads none).
"""

from __future__ import annotations

import dataclasses
import os

from reconciler.connectors.configdef import ConnectorConfig
from reconciler.connectors.storage.location import (
    BadLocation,
    Location,
    Scheme,
    location_problem,
    parse_location,
)
from reconciler.connectors.storage.options import StoreOptions, with_storage_keys
from reconciler.connectors.storage.store import Store, StorageUnavailable


def open_store(path: str, config: ConnectorConfig | StoreOptions) -> Store:
    """The store a connector's `path` (validated already) and store keys (its config, or them
    read already) name; a relative local path is taken from the current directory, as before."""
    location = parse_location(path)
    if location.scheme is Scheme.FILE:
        location = dataclasses.replace(location, root=os.path.abspath(location.root))
    options = config if isinstance(config, StoreOptions) else StoreOptions.read(config)
    return Store(location=location, options=options)


__all__ = [
    "BadLocation",
    "Location",
    "Scheme",
    "StorageUnavailable",
    "Store",
    "StoreOptions",
    "location_problem",
    "open_store",
    "parse_location",
    "with_storage_keys",
]
