"""Kafka Connect's converters for Python connectors: record keys and values as typed columns
(Arrow) and back, as Java's `JsonConverter` (schemas on and off, both decimal formats),
`StringConverter` and `ByteArrayConverter` read and write them (docs/converters.md).

- `settings`: a connector's `key.converter`/`value.converter` keys as a typed `Converter`;
- `schema`, `schema_json`: Connect schemas and JsonConverter's JSON for them;
- `values`: a JSON payload read against a schema, with Java's rules;
- `infer`: a schema for schemaless JSON, per batch;
- `records`: a batch of bytes read into values under one schema, failures per record;
- `encode`: Connect values written as JsonConverter writes them (the envelope), byte for byte;
- `arrow`: Connect types as Arrow types, and `decode`, a batch into an Arrow table;
- `columns`: a sink's batch as one typed table (Connect's fields, key, value columns) and the
  records that did not decode.

Imports `connectors.configdef` and `kafka.formats.jackson` (Jackson's JSON); only `arrow` and
`columns` import pyarrow, and nothing here is imported by `validate`, `plan`, `apply` or `status` but
`settings`. This package module re-exports nothing, so importing `settings` loads no pyarrow.
"""
