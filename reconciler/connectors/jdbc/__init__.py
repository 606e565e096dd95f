"""`jdbc-sink`: topics → PostgreSQL tables, config-compatible with Confluent's JDBC sink and
exactly once (each batch's rows and its partition's next offset in one transaction); and
`jdbc-source`: tables or a query → topics, Confluent's JDBC source keys and offsets.

- `config`: the keys (Confluent's names and defaults), the connection URL, typed settings;
- `sql`: SQL text built with psycopg.sql (identifiers always quoted) and the type mapping;
- `rows`: records (decoded by `connectors.converters`) into columns, rows and deletes, pure;
- `decode`: a partition's buffered records read by their converters, pure;
- `changes`: Debezium change events (found, not configured) read as rows and deletes, pure;
- `temporal`: Connect's and Debezium's time types as PostgreSQL values (`db.timezone`), pure;
- `task`: the sink task (psycopg: COPY, merge, offsets table); `connector`: the plugin;
- `connection`: psycopg connections and one-line errors, for both connectors;
- `source_config`, `source_tables` (which tables, which task), `source_offsets` (Confluent's
  partitions and offsets), `source_types` (columns as Connect fields), `source_sql` (the
  SELECTs), `source_task`; `source`: the source plugin.

It imports `connectors.api`, `connectors.configdef`, `connectors.converters`, `failpoints`;
psycopg and pyarrow only in `sql`, `task` and below, never from `validate`.
"""
