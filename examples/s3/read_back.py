"""Read the archive back with pyarrow's own S3 client: rows, distinct ids, files."""

import os

import pyarrow.dataset as ds
import pyarrow.fs as fs

endpoint = os.environ["AWS_ENDPOINT_URL"]
s3 = fs.S3FileSystem(endpoint_override=endpoint, scheme=endpoint.split(":", 1)[0], region=os.environ["AWS_REGION"])
# Hive-style partitions (topic=…/partition=…); names starting with `_` or `.` are not data.
table = ds.dataset("quickstart/orders-parquet", filesystem=s3, format="parquet", partitioning="hive").to_table()
print(f"{table.num_rows} rows, {len(set(table.column('key').to_pylist()))} distinct keys, "
      f"partitions {sorted(set(table.column('partition').to_pylist()))}")
