"""Keeping Spark Connect sessions across runs: the URL's parameters, the key, the kept file."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.runtime.spark import connect_sessions as kept
from reconciler.runtime.spark.connect_sessions import KeptSession


def test_a_session_id_is_added_to_the_urls_parameters_in_connects_own_syntax() -> None:
    sid = "0c5bd1b4-2f0a-4a8e-9c1d-0b6c1f9d2e11"
    assert kept.with_session_id("sc://h:15002", sid) == f"sc://h:15002/;session_id={sid}"
    assert kept.with_session_id("sc://h:15002/;use_ssl=true;token=abc", sid) == (
        f"sc://h:15002/;use_ssl=true;token=abc;session_id={sid}")
    assert kept.url_params(f"sc://h/;user_id=ann;session_id={sid}") == {"user_id": "ann", "session_id": sid}


def test_the_key_names_server_user_settings_and_code_but_not_the_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("USER", "ann")
    monkeypatch.delenv("SPARK_USER", raising=False)
    base = kept.session_key("sc://h:1/;token=one", {}, "reconciler-aa.zip")
    assert base == kept.session_key("sc://H:1/;token=two", {}, "reconciler-aa.zip")
    others = {
        kept.session_key("sc://h:2/;token=one", {}, "reconciler-aa.zip"),
        kept.session_key("sc://h:1/;token=one", {"spark.x": "1"}, "reconciler-aa.zip"),
        kept.session_key("sc://h:1/;token=one", {}, "reconciler-bb.zip"),
        kept.session_key("sc://h:1/;token=one;user_id=bob", {}, "reconciler-aa.zip"),
    }
    assert base not in others and len(others) == 4


def test_a_kept_session_survives_its_file_and_concurrent_records_of_the_same_session_add_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    first = KeptSession.new()
    first = KeptSession(session_id=first.session_id, server_session_id="s1", verified=True,
                        shipped={"reconciler-aa.zip": "d1"}, checked=frozenset({"datagen"}))
    kept.save("k", first)
    assert kept.load("k") == first
    other = KeptSession(session_id=first.session_id, server_session_id="s1", verified=True,
                        shipped={"plugin.py": "d2"}, checked=frozenset({"plugin:Sink"}))
    kept.save("k", other)  # another run, same session: both runs' records stay
    both = kept.load("k")
    assert both is not None and both.checked == {"datagen", "plugin:Sink"} and set(both.shipped) == {
        "reconciler-aa.zip", "plugin.py"}
    renewed = KeptSession.new()
    kept.save("k", renewed)  # a new session replaces what was known of the old one
    assert kept.load("k") == renewed
    (tmp_path / "connect-reconciler" / "spark-connect" / "k.json").write_text("{not json")
    assert kept.load("k") is None
    kept.forget("k")
    assert kept.load("k") is None


class _Refused(Exception):
    def getCondition(self) -> str:  # noqa: N802 - PySpark's name
        return "INVALID_HANDLE.SESSION_CLOSED"


def test_only_a_session_the_server_will_not_attach_to_counts_as_gone() -> None:
    wrapped = RuntimeError("the Spark Connect server at sc://h did not answer")
    wrapped.__cause__ = _Refused("closed")
    assert kept.is_session_gone(wrapped)
    assert not kept.is_session_gone(RuntimeError("connection refused"))


def test_keeping_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    assert kept.keeping()
    monkeypatch.setenv(kept.ENV_KEEP, "off")
    assert not kept.keeping()
