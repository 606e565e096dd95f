"""Rows written as a table's Parquet data files (not committed): pyiceberg's writer, which
splits them by the table's partition spec and target file size and gathers each file's
column statistics.

pyiceberg 0.12 has no public call for this: `Table.append` and `Transaction.append` write and
commit in one step, `write_file` takes tasks already split by partition (the splitting,
`_determine_partitions`, is private), `parquet_file_to_data_file` describes a file of one
partition only. So `_dataframe_to_data_files` is used (what pyiceberg's own append and
copy-on-write delete call), and pyproject pins pyiceberg below 0.13 so a rename is caught by
an upgrade on purpose, not by a task at run time. Crash point `iceberg.mid_files`: the first
file of several is written, the next is not.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING

from reconciler import failpoints

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import Table


def data_files(table: Table, rows: pa.Table, write_props: Mapping[str, str], write_uuid: uuid.UUID | None = None
               ) -> list[DataFile]:
    """`rows` (the table's columns) as data files under the table's location."""
    from pyiceberg.io.pyarrow import _dataframe_to_data_files

    metadata = table.metadata
    if write_props:
        metadata = metadata.model_copy(update={"properties": {**metadata.properties, **write_props}})
    written: list[DataFile] = []
    for data_file in _dataframe_to_data_files(table_metadata=metadata, df=rows, io=table.io,
                                              write_uuid=write_uuid or uuid.uuid4()):
        if written:  # a second file: the first is on the storage, not referenced by any snapshot
            failpoints.hit(failpoints.Failpoint.ICEBERG_MID_FILES)
        written.append(data_file)
    return written
