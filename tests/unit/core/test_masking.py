"""The process's known secrets and the scrubbing of what it writes (`reconciler.masking`)."""

from __future__ import annotations

import io
import json
import logging
import sys
from collections.abc import Iterator

import pytest

from reconciler import masking
from reconciler.core.live import LiveConnector, LiveState
from reconciler.core.redact import MASK


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    masking.forget_all()
    yield
    masking.forget_all()


def test_live_state_secrets_are_remembered_with_the_recorded_keys() -> None:
    config = {"db.password": "pw-literal", "endpoint": "from-env-value", "uri": "mongodb://u:in-url-pw@h", "topic": "orders"}
    live = LiveState(
        connectors={"c": LiveConnector(name="c", config=config, task_configs=[{"derived.token": "task-token-1"}])},
        sensitive={"c": ["endpoint"]},
    )
    masking.remember_live(live)
    assert masking.known() == {"pw-literal", "from-env-value", "in-url-pw", "task-token-1"}
    assert masking.scrub("got 'from-env-value' and orders") == f"got '{MASK}' and orders"


def test_stdout_and_stderr_are_scrubbed_while_a_command_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    out, err = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    masking.remember(["hunter2-secret"])
    with masking.masked_output():
        print("error: bad value 'hunter2-secret'")
        print("connecting to https://app:pw-in-url@h", file=sys.stderr)
        assert sys.stdout.isatty() is False
    assert sys.stdout is out and sys.stderr is err  # restored
    assert out.getvalue() == f"error: bad value '{MASK}'\n"
    assert err.getvalue() == "connecting to https://app:****@h\n"


def test_log_records_are_scrubbed_before_any_handler_formats_them() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("test-masking")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        masking.mask_log_handlers(logger)
        masking.mask_log_handlers(logger)  # once is enough: no second filter
        assert len(handler.filters) == 1
        masking.remember(["hunter2-secret"])
        logger.warning("stop() failed for %s", "hunter2-secret")
        try:
            raise RuntimeError("boom with hunter2-secret inside")
        except RuntimeError:
            logger.exception("task failed")
    finally:
        logger.removeHandler(handler)
    text = stream.getvalue()
    assert "hunter2-secret" not in text
    assert f"stop() failed for {MASK}" in text and f"RuntimeError: boom with {MASK} inside" in text


def test_json_log_fields_are_scrubbed_even_where_json_escaping_would_hide_a_secret() -> None:
    from reconciler.logs import JsonFormatter

    secret = 'pa"ss\\word-1'  # a quote and a backslash: escaped in JSON, a scrub of the line misses it
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("test-masking-json")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        masking.mask_log_handlers(logger)
        masking.remember([secret])
        fields = {"event": "tick", "connectors": [{"name": "c", "trace": f"auth failed for {secret}"}], "n": 3}
        logger.warning("tick", extra={"fields": fields})
    finally:
        logger.removeHandler(handler)
    doc = json.loads(stream.getvalue())
    assert secret not in stream.getvalue() and secret not in json.dumps(doc)
    assert doc["connectors"] == [{"name": "c", "trace": f"auth failed for {MASK}"}]
    assert doc["n"] == 3 and doc["event"] == "tick"
    assert fields["connectors"][0]["trace"].endswith(secret)  # the caller's own dict is left alone
