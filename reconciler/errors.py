"""The project's error tree. Adapters translate library exceptions into these at the boundary
(`raise … from exc`); `reconciler.cli.main` is the one place that turns them into exit codes.

Every exception class of the package, under its base, with the module that defines it (beside
the code that raises it; tests/unit/project/test_errors_tree.py keeps this list true):

    Exception
        GatewayExited                       runtime.spark.gateway
        NotAnswerable                       api.http
        ProviderFailure                     core.placeholders
        ReconcilerError                     errors
            AzuriteStartError               devtools.azurite
            BadRequest                      api.plugin_catalog
            BrokerStartError                devtools.broker
            BrokerUnreachable               errors
            CommitFailed                    kafka.io.groups
            ConnectStartError               devtools.connect
            ConnectorError                  connectors.api
                BadRecord                   connectors.file_source
                InvalidConnectorConfig      connectors.api
                NoOffsetForPartition        runtime.sink.reset
                OffsetOutOfRange            runtime.sink.reset
                OffsetsRefused              connectors.api
                RecordFailed                connectors.errant
                StorageUnavailable          connectors.storage.store
                TableCommitFailed           connectors.api
                UnwritableRecord            connectors.file_sink
            ExecutorsNotReady               runtime.spark.ship
            Fenced                          errors
            GcsStartError                   devtools.gcs
            HdfsStartError                  devtools.hdfs
            InvalidClientSetting            kafka.io.client_names
            InvalidManifests                errors
            JvmError                        toolchain.maven
            PackError                       devtools.pack_env
            PositionLost                    kafka.io.consume
            PostgresStartError              devtools.postgres
            RetryableError                  errors
            S3StartError                    devtools.s3
            SparkStartError                 devtools.spark_cluster
            SparkUnavailable                runtime.spark.session
            StalePlan                       errors
            UnknownConnector                connectors.registry
            UnknownPlugin                   api.plugin_catalog
        SkippedAfterFailure                 connectors.jdbc.writer
        Stop                                offsets.executor
        UploadFailed                        connectors.storage.conditional
        _UnsupportedTag                     manifests.documents
    RuntimeError
        InjectedFailure                     connectors.faulty
    ValueError
        BadLocation                         connectors.storage.location
        DataError                           connectors.converters.schema
        JsonError                           kafka.formats.jackson
        TreeBinReached                      kafka.formats.javamap
        UnsupportedType                     connectors.jdbc.sql
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (at run time: every command imports this; pydantic models only where used)
    from reconciler.core.diagnostics import Diagnostic


class ReconcilerError(Exception):
    """Terminal: retrying the same command will fail the same way until something changes."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def render(self) -> str:
        return f"error: {self.message}" + (f"\n  hint: {self.hint}" if self.hint else "")


class RetryableError(ReconcilerError):
    """Transient (broker busy, group still has members…): safe to retry after `retry_after` s."""

    def __init__(self, message: str, *, hint: str | None = None, retry_after: float = 5.0) -> None:
        super().__init__(message, hint=hint)
        self.retry_after = retry_after


class InvalidManifests(ReconcilerError):
    """One or more manifests are invalid; carries every diagnostic. `consequence`: what the
    command did not do because of them, in its own words (`plan` never applies anything)."""

    def __init__(self, diagnostics: list[Diagnostic], consequence: str = "nothing was applied") -> None:
        # Warnings (a literal secret) travel along, but are no problems to count.
        errors = sum(1 for d in diagnostics if d.severity.value == "error")
        super().__init__(f"{errors or len(diagnostics)} problem(s) in manifests")
        self.diagnostics = diagnostics
        self.consequence = consequence

    def render(self) -> str:
        lines = [d.render() for d in self.diagnostics]
        lines.append(f"error: {self.message}; {self.consequence}")
        return "\n".join(lines)


class BrokerUnreachable(ReconcilerError):
    """The bootstrap servers did not answer within the connection timeout."""


class Fenced(ReconcilerError):
    """Another reconciler took over this group's transactional id while we were writing."""


class StalePlan(ReconcilerError):
    """A saved plan no longer matches the live state (or the manifests) it was made from."""
