"""The secret values this process has seen, and their removal from everything it writes.

Configs are masked by key where they are shown (`core.redact`). Free text cannot be: an error
message, a trace or a log line may quote any value. So every secret value met on the way in is
remembered here — manifests' (`remember_connectors`), the live state's (`remember_live`), the
Kafka client's own settings — and the CLI passes everything it writes through `scrub`:
stdout and stderr (`masked_output`), log records (`MaskingFilter`), and the files it writes.

A process-wide set, on purpose: the values arrive in one layer and the text leaves from
another, and the rule must hold for text nobody thought of (GitHub Actions masks secrets in
logs the same way).
"""

from __future__ import annotations

import contextlib
import io
import logging
import sys
import threading
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from itertools import chain
from typing import IO, TYPE_CHECKING, Any

from reconciler.core.redact import scrub as scrub_with
from reconciler.core.redact import secret_values, secret_values_of_all

if TYPE_CHECKING:
    from reconciler.core.live import LiveState
    from reconciler.core.models import DesiredConnector

_lock = threading.Lock()
_known: frozenset[str] = frozenset()


def remember(values: Iterable[str]) -> None:
    global _known
    new = frozenset(values) - _known
    if new:
        with _lock:
            _known = _known | new


def remember_config(config: Mapping[str, str | None], sensitive: Iterable[str] = ()) -> None:
    remember(secret_values(config, frozenset(sensitive)))


def remember_connectors(connectors: Sequence[DesiredConnector]) -> None:
    # Here, not at the top: the CLI imports this module first thing, and the normaliser brings
    # the models (pydantic, ~0.25 s) that `run --once` imports after launching Spark's JVM.
    from reconciler.core.normalize import connector_properties  # noqa: PLC0415

    found: set[str] = set()
    for connector in connectors:
        found |= secret_values(connector_properties(connector), connector.sensitive_keys)
    remember(found)


def remember_live(live: LiveState, names: Collection[str] | None = None) -> None:
    """Every connector's and task's secret values (with the sensitive keys recorded at apply);
    `names`: only those connectors' (the others were remembered before)."""
    found: set[str] = set()
    sensitive = live.sensitive
    connectors = live.connectors if names is None else {n: live.connectors[n] for n in names if n in live.connectors}
    for name in sensitive.keys() & connectors.keys():
        connector = connectors[name]
        for config in (connector.config or {}, *connector.task_configs):
            found |= secret_values(config, sensitive[name])
    plain = [connector for name, connector in connectors.items() if name not in sensitive]
    found |= secret_values_of_all(chain((c.config for c in plain if c.config), *(c.task_configs for c in plain)))
    for name, view in live.uncommitted.items():  # what a worker reading aborted records holds
        found |= secret_values(view.config or {}, live.sensitive.get(name, ()))
    remember(found)


def known() -> frozenset[str]:
    return _known


def forget_all() -> None:
    """For tests: start from a process that has seen no secret."""
    global _known
    with _lock:
        _known = frozenset()


def scrub(text: str) -> str:
    """`text` without any remembered secret value, and with URL credentials masked."""
    return scrub_with(text, _known)


class MaskingStream(io.TextIOBase):
    """A text stream that scrubs what is written, then hands it to `target`.

    A value split across two `write` calls would escape; `print` writes its text whole, and
    the renderers write a document at once.
    """

    def __init__(self, target: IO[str]) -> None:
        super().__init__()
        self.target = target

    def write(self, text: str) -> int:
        self.target.write(scrub(text))
        return len(text)

    def flush(self) -> None:
        self.target.flush()

    def isatty(self) -> bool:
        return self.target.isatty()

    def fileno(self) -> int:
        return self.target.fileno()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]  # TextIOBase declares it read-only
        return getattr(self.target, "encoding", "utf-8")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.target, name)


class MaskingFilter(logging.Filter):
    """Scrubs a log record's message, arguments, event fields and traceback before any handler
    formats it.

    The fields (`extra={"fields": …}`, merged into a JSON log line) are scrubbed here, value by
    value: the stream under the handler sees them JSON-escaped, and a secret holding a quote,
    a backslash or a control character would no longer match there."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = scrub(record.getMessage())
        record.args = None
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            record.fields = _scrubbed(fields)
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = scrub(record.exc_text)
        return True


def _scrubbed(value: Any) -> Any:
    """`value` with every string in it scrubbed, through dicts, lists and tuples."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {key: _scrubbed(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_scrubbed(item) for item in value]
    return value


def mask_log_handlers(logger: logging.Logger | None = None) -> None:
    """Add the filter to every handler of `logger` (default: the root logger), once."""
    for handler in (logger or logging.getLogger()).handlers:
        if not any(isinstance(f, MaskingFilter) for f in handler.filters):
            handler.addFilter(MaskingFilter())


@contextlib.contextmanager
def masked_output() -> Iterator[None]:
    """stdout and stderr scrubbed while the block runs (the CLI runs every command in one)."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = MaskingStream(saved[0]), MaskingStream(saved[1])
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        sys.stdout, sys.stderr = saved
