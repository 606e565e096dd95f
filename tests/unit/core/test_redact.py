"""The one masking rule (`core.redact`): table-driven, pure."""

from __future__ import annotations

import os
import traceback
from pathlib import Path

import pytest

from reconciler.core.redact import (
    MASK,
    is_secret_key,
    mask_config,
    mask_value,
    scrub,
    seal,
    seal_config,
    seal_matches,
    secret_values,
)


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("connection.password", True),
        ("ssl.key.password", True),
        ("sasl.jaas.config", True),
        ("producer.override.sasl.jaas.config", True),
        ("basic.auth.user.info", True),
        ("schema.registry.basic.auth.user.info", True),
        ("gcs.credentials.json", True),
        ("aws.secret.access.key", True),
        ("api.key", True),
        ("api_token", True),
        ("private.key", True),
        ("db-PASSWD", True),
        ("key.converter", False),
        ("key.converter.schemas.enable", False),
        ("key", False),  # file-source's `key: location|none`
        ("record.key", True),
        ("topics", False),
        ("connection.url", False),
        ("record.bytes", False),
    ],
)
def test_secret_looking_keys(key: str, secret: bool) -> None:
    assert is_secret_key(key) is secret


def test_sensitive_set_masks_any_key() -> None:
    assert is_secret_key("topics", {"topics"})
    assert mask_value("topics", "orders", {"topics"}) == MASK


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("mongodb://app:s3cr3t@db1:27017/orders", "mongodb://app:****@db1:27017/orders"),
        ("jdbc:mysql://app:s3cr3t@db/orders", "jdbc:mysql://app:****@db/orders"),
        ("jdbc:postgresql://db/orders?user=app&password=s3cr3t&ssl=true", "jdbc:postgresql://db/orders?user=app&password=****&ssl=true"),
        ("jdbc:sqlserver://db;user=app;password=s3cr3t;encrypt=true", "jdbc:sqlserver://db;user=app;password=****;encrypt=true"),
        ("jdbc:oracle:thin:scott/s3cr3t@db:1521/ORCL", "jdbc:oracle:thin:scott/****@db:1521/ORCL"),
        ('x required username="u" password="s3cr3t";', 'x required username="u" password="****";'),
        ("http://db:8080/path", "http://db:8080/path"),  # no userinfo: unchanged
        ("orders,payments", "orders,payments"),
    ],
)
def test_credentials_inside_values(value: str, shown: str) -> None:
    assert mask_value("connection.url", value) == shown
    assert "s3cr3t" not in str(mask_config({"connection.url": value}))


@pytest.mark.parametrize("value", ["${file:/etc/secrets.properties:pw}", "prefix-${vault:secret/db:pw}"])
def test_a_placeholder_value_is_masked_whatever_its_key(value: str) -> None:
    assert mask_value("whatever", value) == MASK


def test_secret_values_are_whole_credentials_and_what_urls_hold() -> None:
    config = {
        "db.password": "hunter2-pw",
        "uri": "mongodb://u:url-secret@h/db",
        "plain": "visible-value",
        "short.password": "abc",  # too short to hunt for in free text
        "primary.key.mode": "record_key",  # masked by key, but a field name: not hunted for
        "ssl.key.password": None,
    }
    assert secret_values(config) == {"hunter2-pw", "url-secret"}
    assert secret_values(config, {"plain"}) == {"hunter2-pw", "url-secret", "visible-value"}


def test_scrub_replaces_values_and_masks_urls_in_free_text() -> None:
    text = "record.bytes: must be an integer; got 'envPW_zzz' (connecting to https://me:pw123@h/x)"
    assert scrub(text, {"envPW_zzz"}) == (
        f"record.bytes: must be an integer; got '{MASK}' (connecting to https://me:****@h/x)"
    )
    # The longer of two overlapping secrets is masked whole.
    assert scrub("key=abcd-efgh", {"abcd", "abcd-efgh"}) == f"key={MASK}"
    # Prose that tells the user what to set is left alone.
    assert scrub("export DB_PASSWORD=… first", set()) == "export DB_PASSWORD=… first"


def test_scrub_finds_any_of_thousands_of_secrets() -> None:
    """One password per connector: the pattern is a trie, longest match first."""
    secrets = {f"pw-{i:05d}" for i in range(5000)} | {"pw-00042-longer"}
    text = "a: pw-00042-longer; b: pw-04999; c: pw-5000 (not one)"
    assert scrub(text, secrets) == f"a: {MASK}; b: {MASK}; c: pw-5000 (not one)"
    # Overlapping secrets leave no piece of either.
    assert scrub("x abcdefghi y", {"abcdef", "defghi"}) == f"x {MASK} y"


def test_seals_match_only_their_value_and_do_not_hold_it() -> None:
    salt = b"0123456789abcdef"
    sealed = seal("hunter2-pw", salt)
    assert "hunter2" not in sealed and sealed.startswith("(sensitive hmac-sha256$")
    assert seal_matches(sealed, "hunter2-pw") and seal_matches(sealed, " hunter2-pw ")  # Connect trims
    assert not seal_matches(sealed, "hunter3-pw")
    assert not seal_matches("(sensitive hmac-sha256$x$y$z)", "hunter2-pw")  # malformed: no match
    assert not seal_matches("(sensitive hmac-sha256$!!$AA)", "hunter2-pw")
    assert seal("hunter2-pw", b"another-salt-123") != sealed  # salted: equal values differ across snapshots


def test_seal_config_seals_exactly_what_would_be_masked() -> None:
    config = {"db.password": "pw-value", "uri": "mongodb://u:p4ss@h", "topics": "orders", "n": None}
    sealed = seal_config(config, (), b"salt-salt-salt-1")
    assert sealed["topics"] == "orders" and sealed["n"] is None
    assert seal_matches(sealed["db.password"] or "", "pw-value")
    assert seal_matches(sealed["uri"] or "", "mongodb://u:p4ss@h")


def test_a_bare_key_setting_is_neither_masked_nor_scrubbed() -> None:
    config = {"key": "none", "path": "/in", "api.key": "k3y-s3cr3t"}
    assert secret_values(config) == {"k3y-s3cr3t"}
    assert scrub("no line was read: none", secret_values(config)) == "no line was read: none"


def test_an_os_error_naming_a_directory_above_a_secret_path_does_not_leak_it(tmp_path: Path) -> None:
    (tmp_path / "acme-7f3a9c").write_text("a file where the sink expects a directory")
    secret = str(tmp_path / "acme-7f3a9c" / "out" / "part-0")
    try:  # what a sink does with a directory it was given: the OS names the part it could not make
        os.makedirs(secret)
    except OSError:
        trace = traceback.format_exc()
    else:
        raise AssertionError("the file should not be creatable")
    assert "acme-7f3a9c" not in scrub(trace, [secret]), "the OS quoted a prefix of the secret path"
    error = f"FileNotFoundError: [Errno 2] No such file or directory: '{tmp_path / 'acme-7f3a9c'}'"
    assert scrub(error, [secret]) == f"FileNotFoundError: [Errno 2] No such file or directory: {MASK}"
    # Only quoted, as OS errors quote paths: prose naming a common directory stays readable.
    assert scrub("files go under /srv unless set", ["/srv/acme-7f3a9c/out"]) == "files go under /srv unless set"
    assert scrub("relative 'acme-7f3a9c/out'", ["acme-7f3a9c/out/x"]) == "relative 'acme-7f3a9c/out'"
