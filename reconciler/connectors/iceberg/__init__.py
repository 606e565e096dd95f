"""`iceberg-sink`: topics → Apache Iceberg tables, config-compatible with Apache Iceberg's Kafka
Connect sink, exactly once with the offsets in the snapshots' summaries (docs/connectors.md#iceberg-sink).

- `config`: the Java sink's keys and the settings a task runs with (pure);
- `catalog`: `iceberg.catalog.*` as pyiceberg's catalog properties, and the catalog opened;
- `offsets`: the offsets a table holds, in its snapshot summaries;
- `routing`: which table each record goes to (route field, regexes, dynamic tables);
- `tables`: a table loaded, created or evolved for a batch, and the batch cast to its columns;
- `datafiles`: a written data file's metadata as JSON, from the tasks to the driver;
- `writing`: rows written as a table's data files (pyiceberg's writer);
- `keyed`: upsert mode and the CDC field, the task's half (the last record per key);
- `task`: the task (decode, route, write data files; nothing committed; misfits to the DLQ);
- `upsert`: upsert mode, the driver's half (the superseded keys' rows rewritten away);
- `commit`: the driver's side (the tables' offsets, one snapshot per table, KIP-875 rewinds);
- `connector`: the plugin.

It imports the plugin API and the converters' settings;
pyiceberg and pyarrow only inside the functions that use them, so `validate` loads neither.
"""
