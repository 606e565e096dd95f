"""What this machine lends the runtime and the development tools: Java, Maven, a cache directory.

`maven` (Java found and checked, jars resolved from a pinned `pom.xml` through Maven, the
class path cached) and `caches` (the project's cache directory, and keeping it bounded). Both
`runtime` (Spark's Kafka data source, shipped code, the CDS archive) and `devtools` (Kafka's
own jars, the packed executor environment) import it.

May import only the leaves (`errors`); a leaf itself for everything above it.
"""
