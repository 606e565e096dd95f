"""`jdbc-sink`: topics → PostgreSQL tables, config-compatible with Confluent's JDBC sink and
exactly once (each batch's rows and its partition's next offset in one transaction).

- `config`: the keys (Confluent's names and defaults), the connection URL, typed settings;
- `sql`: SQL text built with psycopg.sql (identifiers always quoted) and the type mapping;
- `rows`: records (decoded by `connectors.converters`) into columns, rows and deletes, pure;
- `task`: the sink task (psycopg: COPY, merge, offsets table); `connector`: the plugin.

It imports `connectors.api`, `connectors.configdef`, `connectors.converters`, `failpoints`;
psycopg and pyarrow only in `sql`, `task` and below, never from `validate`.
"""
