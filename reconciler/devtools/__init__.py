"""Developer tools: Apache Kafka (`broker`) and a Java Connect worker (`connect`) on loopback, their
jars (`jvm`), a Spark standalone cluster and a Spark Connect server (`spark_cluster`), the
executors' packed environment (`pack_env`), librdkafka's property names (`librdkafka_names`),
and the real stores: PostgreSQL (`postgres`), an S3-compatible server (`s3`), a GCS server
(`gcs`, fake-gcs-server) and Azure Blob Storage (`azurite`, Azurite from its pinned npm lock
file), for tests, benchmarks and the quickstart. The broker, the Connect worker, Spark's processes
and the object-store servers are each started, awaited and stopped by `process` (logs to a file, readiness by
polling, SIGTERM then SIGKILL by PID, free loopback ports). A top layer beside the CLI: it may import any package,
and nothing in the product imports it.
"""
