"""Developer tools: Apache Kafka and a Java Connect worker on loopback, for tests, benchmarks and the quickstart (never used by the CLI)."""
