"""librdkafka client configs, error translation and the connectivity check.

Every Kafka client the reconciler creates gets its config from here, so the settings that
matter for correctness live in one place:
- producers place keys with `murmur2_random`, Java's partitioner (docs/record-formats.md#partitioning),
  so a record written here lands where a Connect worker would put (and look for) it;
- consumers use a short `fetch.queue.backoff.ms`: when a fast read fills the local queue,
  librdkafka otherwise waits a whole second before its next fetch; and a short
  `fetch.wait.max.ms`, so the end of a partition is reported in milliseconds;
- librdkafka's own log lines (one per failed connection attempt, every 50 ms) go to a debug
  logger instead of stderr, so a user sees one clear error instead of a wall of `%3|FAIL|…`.
"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from reconciler.errors import BrokerUnreachable, ReconcilerError
from reconciler.kafka.settings import KafkaSettings

if TYPE_CHECKING:
    from confluent_kafka import KafkaError, KafkaException

Config = dict[str, Any]
T = TypeVar("T")

LOG = logging.getLogger("reconciler.kafka.librdkafka")

UNREACHABLE_HINT = (
    "check --bootstrap-servers / RECONCILER_BOOTSTRAP_SERVERS, that the broker is running and "
    "its listener/advertised address, and -X security settings"
)


class _LibrdkafkaLog:
    """The `logger` object confluent-kafka calls; everything becomes a debug line (-vv)."""

    def log(self, level: int, fmt: str, *args: object) -> None:
        LOG.debug(fmt, *args)


class ErrorCollector:
    """An `error_cb`: remembers the last client-level error, to explain a later timeout."""

    def __init__(self) -> None:
        self.last: KafkaError | None = None

    def __call__(self, error: KafkaError) -> None:
        LOG.debug("client error: %s", error)
        self.last = error

    def explain(self) -> str:
        return f" (last client error: {self.last.str()})" if self.last is not None else ""


def _common(settings: KafkaSettings, errors: ErrorCollector | None) -> Config:
    # librdkafka's default (sparse) connects to the brokers it learns from the bootstrap
    # metadata only when first needed, after a reconnect backoff: ~50 ms lost by every
    # short-lived client (measured: a consumer's first metadata call 1 ms → 52 ms). Our clients
    # are short-lived and talk to every broker anyway. Before the user's settings: -X wins.
    conf: Config = {"logger": _LibrdkafkaLog(), "log.connection.close": False, "enable.sparse.connections": False}
    if errors is not None:
        conf["error_cb"] = errors
    conf.update(settings.client())
    return conf


def admin_config(settings: KafkaSettings, errors: ErrorCollector | None = None) -> Config:
    return _common(settings, errors)


def producer_config(settings: KafkaSettings, errors: ErrorCollector | None = None, **overrides: Any) -> Config:
    conf = _common(settings, errors)
    # After the user's settings on purpose: another partitioner would break Connect compatibility.
    conf["partitioner"] = "murmur2_random"
    conf.update(overrides)
    return conf


def consumer_config(settings: KafkaSettings, errors: ErrorCollector | None = None, **overrides: Any) -> Config:
    conf = _common(settings, errors)
    conf.setdefault("fetch.queue.backoff.ms", 10)
    # An empty fetch is held this long by the broker before it answers; reading to the end waits
    # for exactly that answer (the EOF), so the default 500 ms would be paid on every partition.
    conf.setdefault("fetch.wait.max.ms", 10)
    # librdkafka requires a group id even for assign()-only consumers; nothing is committed.
    conf.setdefault("group.id", f"reconciler-reader-{settings.group_id}")
    conf["enable.auto.commit"] = False
    conf["enable.auto.offset.store"] = False
    conf.update(overrides)
    return conf


def kafka_error(exc: KafkaException) -> KafkaError | None:
    """The KafkaError a KafkaException carries (None for odd, argument-less ones)."""
    from confluent_kafka import KafkaError

    arg = exc.args[0] if exc.args else None
    return arg if isinstance(arg, KafkaError) else None


def describe(exc: BaseException) -> str:
    """A KafkaException's message without the `KafkaError{code=…}` wrapping."""
    from confluent_kafka import KafkaException

    if isinstance(exc, KafkaException):
        error = kafka_error(exc)
        if error is not None:
            return f"{error.str()} ({error.name()})"
    return str(exc)


def is_unreachable(error: KafkaError | None) -> bool:
    from confluent_kafka import KafkaError

    unreachable = {KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._TIMED_OUT, KafkaError._RESOLVE}
    return error is not None and error.code() in unreachable


def unreachable(settings: KafkaSettings, detail: str = "", *, waited: bool = True) -> BrokerUnreachable:
    within = f" within {settings.timeout_s:g}s" if waited else ""
    message = f"cannot reach Kafka at {settings.bootstrap_servers}{within}"
    return BrokerUnreachable(message + (f": {detail}" if detail else ""), hint=UNREACHABLE_HINT)


def translate(exc: KafkaException, settings: KafkaSettings, doing: str) -> ReconcilerError:
    """The project error for a librdkafka failure while `doing` something (e.g. "reading X")."""
    if is_unreachable(kafka_error(exc)):
        return unreachable(settings, f"{doing}: {describe(exc)}")
    return ReconcilerError(f"Kafka error while {doing}: {describe(exc)}")


def is_transient(error: KafkaError | None) -> bool:
    """An answer Kafka's own clients retry: a partition's leader or a group's coordinator is
    moving or still loading (right after a topic or `__consumer_offsets` is created, measured:
    up to ~0.3 s on one node). librdkafka's admin API hands these back instead of retrying, and
    does not always mark them retriable. Group membership answers (REBALANCE_IN_PROGRESS…) are
    not in the list: for offsets requests they mean zombie sink tasks, which Connect reports."""
    from confluent_kafka import KafkaError

    transient = {
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError.OFFSET_NOT_AVAILABLE,
        KafkaError.FENCED_LEADER_EPOCH,
        KafkaError.UNKNOWN_LEADER_EPOCH,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.NOT_COORDINATOR,
    }
    return error is not None and error.code() in transient


def retry_transient(settings: KafkaSettings, call: Callable[[], T], *, max_delay_s: float = 0.5) -> T:
    """`call()`, again after a short pause while it fails with a transient Kafka error, until
    `settings.timeout_s` has passed; then (or on any other error) the error is raised. The
    pause starts at 20 ms and doubles up to `max_delay_s`."""
    from confluent_kafka import KafkaException

    deadline = time.monotonic() + settings.timeout_s
    delay = min(0.02, max_delay_s)
    while True:
        try:
            return call()
        except KafkaException as exc:
            if not is_transient(kafka_error(exc)) or time.monotonic() + delay > deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, max_delay_s)


def _create(factory: Any, conf: Config) -> Any:
    from confluent_kafka import KafkaException

    try:
        return factory(conf)
    except (KafkaException, ValueError) as exc:  # librdkafka rejects a setting (bad -X key or value)
        raise ReconcilerError(
            f"invalid Kafka client setting: {describe(exc)}", hint="check -X / --kafka-config"
        ) from exc


def new_admin(settings: KafkaSettings, errors: ErrorCollector | None = None) -> Any:
    from confluent_kafka.admin import AdminClient

    return _create(AdminClient, admin_config(settings, errors))


def new_producer(settings: KafkaSettings, errors: ErrorCollector | None = None, **overrides: Any) -> Any:
    from confluent_kafka import Producer

    return _create(Producer, producer_config(settings, errors, **overrides))


def new_consumer(settings: KafkaSettings, errors: ErrorCollector | None = None, **overrides: Any) -> Any:
    from confluent_kafka import Consumer

    return _create(Consumer, consumer_config(settings, errors, **overrides))


# How long the probe of the bootstrap addresses waits for each TCP connection.
PROBE_TIMEOUT_S = 3.0
_probed: set[str] = set()  # bootstrap lists that accepted a connection in this process


def probe_bootstrap(settings: KafkaSettings) -> None:
    """Fail at once when no bootstrap address can take a TCP connection: every one refused,
    unresolvable or unroutable. librdkafka retries such addresses until `settings.timeout_s`
    (30 s by default) and then says only that it timed out; a wrong port or a broker that is
    down is known in milliseconds. An address that does not answer within PROBE_TIMEOUT_S (a
    firewall dropping packets) proves nothing: the clients' own timeout decides then. Once per
    bootstrap list and process: a kept store's ticks do not pay for it again."""
    bootstrap = settings.bootstrap_servers
    if bootstrap in _probed:
        return
    failures: list[tuple[str, str]] = []
    for address in filter(None, (part.strip() for part in bootstrap.split(","))):
        failure = _connect_failure(address, min(PROBE_TIMEOUT_S, settings.timeout_s))
        if failure is None:
            _probed.add(bootstrap)
            return
        failures.append((address, failure))
    if failures and all(failure != _NO_ANSWER for _, failure in failures):
        detail = failures[0][1] if len(failures) == 1 else "; ".join(f"{a}: {f}" for a, f in failures)
        raise unreachable(settings, detail, waited=False)


_NO_ANSWER = "no answer yet"
DEFAULT_PORT = "9092"  # librdkafka's for an address without one (`RD_KAFKA_PORT`)


def _connect_failure(address: str, timeout_s: float) -> str | None:
    """Why a TCP connection to `host:port` (a `SCHEME://` prefix and IPv6 brackets allowed)
    failed, or None when it was accepted."""
    hostport = address.rpartition("://")[2]
    if ":" not in hostport or hostport.endswith("]"):  # no port: librdkafka's default
        host, port = hostport, DEFAULT_PORT
    else:
        host, _, port = hostport.rpartition(":")
    host = host.strip("[]")
    if not host:
        return None  # librdkafka's to judge
    if not port.isdigit() or not 0 < int(port) < 65536:  # librdkafka retries it until the timeout
        return f"the port {port!r} is not a port number (1-65535)"
    try:
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except ConnectionRefusedError:
        return "connection refused (nothing listens on that port)"
    except socket.gaierror as exc:
        return f"cannot resolve host {host!r} ({exc.strerror})"
    except TimeoutError:
        return _NO_ANSWER
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def check_reachable(settings: KafkaSettings) -> None:
    """Fail fast, within `settings.timeout_s`, with one clear message if no broker answers."""
    from confluent_kafka import KafkaException

    admin = new_admin(settings)  # first: a bad setting is reported as such, whatever the address
    probe_bootstrap(settings)
    try:
        admin.list_topics(timeout=settings.timeout_s)
    except KafkaException as exc:
        if is_unreachable(kafka_error(exc)):
            raise unreachable(settings) from exc
        raise translate(exc, settings, "fetching cluster metadata") from exc
