"""`delta-sink`: topics → a Delta Lake table, exactly once through the driver's commit.

- `config`: the keys (`delta.*`, Connect's `topics`/`topics.regex`, the `s3.*` store keys), the
  typed settings and the store options for delta-rs and pyarrow (pure);
- `files`: a task's records as typed columns and its Parquet data files (pyarrow);
- `table`: the driver's side (delta-rs): offsets from the table's `txn` actions, schema checks
  and evolution, one commit per batch (`create_write_transaction`);
- `connector`: the plugin (`DeltaSinkConnector`) and its task (`DeltaSinkTask`).

`config` and `connector` import no pyarrow nor deltalake (`validate` loads them); `files` and
`table` are imported inside the functions that need them. docs/connectors.md#delta-sink.
"""
