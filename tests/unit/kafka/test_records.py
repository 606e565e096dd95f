"""Connect record formats: byte-exact encoders and Java-tolerant decoders (docs/record-formats.md)."""

from __future__ import annotations

import pytest

from reconciler.core.live import ConnectTargetState, InstanceState, InstanceStatus
from reconciler.kafka.formats import own_records as own
from reconciler.kafka.formats import records as rec
from reconciler.kafka.formats.records import Invalid, Record, RestartFlags

import record_encoders

STARTED, PAUSED, STOPPED = (
    ConnectTargetState.STARTED,
    ConnectTargetState.PAUSED,
    ConnectTargetState.STOPPED,
)


# --- config topic: encoders -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("record", "key", "value"),
    [
        (
            rec.connector_config_record(
                "jdbc-src", {"connector.class": "io.x.JdbcSource", "tasks.max": "2", "name": "jdbc-src"}
            ),
            b"connector-jdbc-src",
            b'{"properties":{"connector.class":"io.x.JdbcSource","tasks.max":"2","name":"jdbc-src"}}',
        ),
        (rec.connector_tombstone("jdbc-src"), b"connector-jdbc-src", None),
        (
            rec.task_config_record("jdbc-src", 1, {"table": "b", "task.class": "io.x.JdbcTask"}),
            b"task-jdbc-src-1",
            b'{"properties":{"table":"b","task.class":"io.x.JdbcTask"}}',
        ),
        (rec.commit_record("jdbc-src", 2), b"commit-jdbc-src", b'{"tasks":2}'),
        (rec.commit_record("jdbc-src", 0), b"commit-jdbc-src", b'{"tasks":0}'),
        (
            rec.target_state_record("jdbc-src", STARTED),
            b"target-state-jdbc-src",
            b'{"state":"STARTED","state.v2":"STARTED"}',
        ),
        (
            rec.target_state_record("jdbc-src", PAUSED),
            b"target-state-jdbc-src",
            b'{"state":"PAUSED","state.v2":"PAUSED"}',
        ),
        (
            rec.target_state_record("jdbc-src", STOPPED),
            b"target-state-jdbc-src",
            b'{"state":"PAUSED","state.v2":"STOPPED"}',
        ),
        (rec.target_state_tombstone("jdbc-src"), b"target-state-jdbc-src", None),
        (
            rec.restart_record("jdbc-src", include_tasks=True, only_failed=True),
            b"restart-connector-jdbc-src",
            b'{"include-tasks":true,"only-failed":true}',
        ),
        (
            rec.restart_record("jdbc-src", include_tasks=False, only_failed=True),
            b"restart-connector-jdbc-src",
            b'{"include-tasks":false,"only-failed":true}',
        ),
        (rec.tasks_fencing_record("jdbc-src", 2), b"tasks-fencing-jdbc-src", b'{"task-count":2}'),
    ],
)
def test_config_records_are_byte_exact(record: Record, key: bytes, value: bytes | None) -> None:
    assert record == Record("configs", key, value)
    assert record.is_tombstone is (value is None)


def test_properties_keep_caller_order_and_null_values() -> None:
    props = {"z": "1", "a": None, "m": "x"}
    assert rec.encode_properties(props) == b'{"properties":{"z":"1","a":null,"m":"x"}}'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Größe ✓ 東京", '"Größe ✓ 東京"'.encode()),  # non-ASCII is not \u-escaped
        ("a/b", b'"a/b"'),  # `/` is not escaped
        ('q"b\\', b'"q\\"b\\\\"'),
        ("l1\n\tat x", b'"l1\\n\\tat x"'),
        ("\x08\x0c\r", b'"\\b\\f\\r"'),
        ("\x01\x1b\x1f\x00", b'"\\u0001\\u001B\\u001F\\u0000"'),  # Jackson: upper-case hex
        ("\x7f", b'"\x7f"'),
        ("text \\u001b stays", b'"text \\\\u001b stays"'),  # an escaped backslash is not a \u escape
        # Outside the BMP: Jackson writes the two UTF-16 surrogates as escapes, never 4 UTF-8 bytes.
        ("a😀b", b'"a\\uD83D\\uDE00b"'),
        ("𝄞 ü", b'"\\uD834\\uDD1E \xc3\xbc"'),
        ("\ud800x\udfff", b'"\\uD800x\\uDFFF"'),  # a lone surrogate (a Java string may hold one)
    ],
)
def test_strings_are_escaped_like_jackson(text: str, expected: bytes) -> None:
    assert rec.dumps(text) == expected


def test_non_finite_numbers_are_refused() -> None:
    with pytest.raises(ValueError):
        rec.dumps({"x": float("nan")})


def test_escapes_read_back_to_the_same_text() -> None:
    for text in ["a😀b", "\ud800", "𝄞\x01"]:
        assert rec.loads(rec.dumps(text)) == text


# --- config topic: decoders -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (b'{"state":"PAUSED","state.v2":"STOPPED"}', STOPPED),
        (b'{"state":"STARTED","state.v2":"STARTED"}', STARTED),
        (b'{"state":"PAUSED"}', PAUSED),  # V0, written by a pre-3.5 worker
        (b'{"state":"PAUSED","state.v2":null}', PAUSED),
        (b'{"state":"PAUSED","state.v2":7}', PAUSED),  # non-string v2: fall back to `state`
        (b'{"state.v2":"STOPPED"}', STOPPED),
    ],
)
def test_target_state_read_rule(value: bytes, expected: ConnectTargetState) -> None:
    assert rec.decode_target_state(value) is expected


@pytest.mark.parametrize(
    "value",
    [
        b'{"state":"STARTED","state.v2":"RESUMED"}',  # invalid v2 name: no fallback, record ignored
        b'{"state":"RUNNING"}',  # REST's name, not a TargetState
        b'{"state":7}',
        b"{}",
        b'["PAUSED"]',
        b"not json",
        b"",
    ],
)
def test_invalid_target_states(value: bytes) -> None:
    assert isinstance(rec.decode_target_state(value), Invalid)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (b'{"tasks":3}', 3),
        (b'{"tasks":0}', 0),
        (b'{"tasks":4294967299}', 3),  # a long: Java's (int) cast keeps the low 32 bits
        (b'{"tasks":3,"extra":1}', 3),
    ],
)
def test_commit_accepts_int_or_long(value: bytes, expected: int) -> None:
    assert rec.decode_commit(value) == expected


@pytest.mark.parametrize("value", [b'{"tasks":"3"}', b'{"tasks":3.0}', b'{"tasks":true}', b"{}", b"[3]"])
def test_commit_rejects_non_integers(value: bytes) -> None:
    assert isinstance(rec.decode_commit(value), Invalid)


def test_tasks_fencing_decodes_its_count() -> None:
    assert rec.decode_tasks_fencing(b'{"task-count":2}') == 2
    assert isinstance(rec.decode_tasks_fencing(b'{"tasks":2}'), Invalid)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (b'{"include-tasks":true,"only-failed":true}', RestartFlags(True, True)),
        (b'{"include-tasks":true}', RestartFlags(True, False)),  # missing boolean = false
        (b'{"include-tasks":"true","only-failed":1}', RestartFlags(False, False)),  # not booleans
        (b"{}", RestartFlags(False, False)),
    ],
)
def test_restart_flags_default_to_false(value: bytes, expected: RestartFlags) -> None:
    assert rec.decode_restart(value) == expected


def test_restart_must_be_an_object() -> None:
    assert isinstance(rec.decode_restart(b"[true,true]"), Invalid)


def test_properties_decoder_shows_non_strings_as_text() -> None:
    value = b'{"properties":{"a":"x","tasks.max":2,"flag":true,"ratio":1.0E10,"n":null,"l":[1]}}'
    assert rec.decode_properties(value) == {
        "a": "x",
        "tasks.max": "2",
        "flag": "true",
        "ratio": "1.0E10",
        "n": None,
        "l": "[1]",
    }


@pytest.mark.parametrize("value", [b'{"properties":"x"}', b'{"props":{}}', b"[]", b"{"])
def test_properties_decoder_rejects_other_shapes(value: bytes) -> None:
    assert isinstance(rec.decode_properties(value), Invalid)


@pytest.mark.parametrize(
    ("key", "prefix", "expected"),
    [
        ("task-jdbc-src-0", "task-", ("jdbc-src", 0)),
        ("task-a-b-c-12", "task-", ("a-b-c", 12)),
        ("task--3", "task-", ("", 3)),  # Java accepts the empty name
        ("task-src-007", "task-", ("src", 7)),
        ("task-src-+4", "task-", ("src", 4)),  # Integer.parseInt accepts a sign
        ("task-src-1-", "task-", ("src", 1)),  # String.split drops the trailing empty piece
        ("task-src", "task-", None),
        ("task-src-x", "task-", None),
        ("task-src-99999999999", "task-", None),  # not an int32
        ("task-", "task-", None),
        ("status-task-jdbc-src-1", "status-task-", ("jdbc-src", 1)),
        ("status-task-src", "status-task-", None),
    ],
)
def test_task_ids_are_parsed_like_java(key: str, prefix: str, expected: tuple[str, int] | None) -> None:
    assert rec.parse_task_id(key, prefix) == expected


# --- status topic ---------------------------------------------------------------------------------

TRACE = "org.apache.kafka.connect.errors.ConnectException: boom\n\tat io.x.Task.poll(Task.java:42)\n"


def test_status_fields_in_schema_order_with_explicit_null_trace() -> None:
    running = InstanceStatus(state=InstanceState.RUNNING, worker_id="10.0.0.5:8083", generation=7)
    assert rec.connector_status_record("jdbc-src", running) == Record(
        "status",
        b"status-connector-jdbc-src",
        b'{"state":"RUNNING","trace":null,"worker_id":"10.0.0.5:8083","generation":7,"version":null}',
    )
    failed = InstanceStatus(
        state=InstanceState.FAILED, trace=TRACE, worker_id="10.0.0.6:8083", generation=8
    )
    assert rec.task_status_record("jdbc-src", 1, failed) == Record(
        "status",
        b"status-task-jdbc-src-1",
        b'{"state":"FAILED","trace":"org.apache.kafka.connect.errors.ConnectException: boom'
        b'\\n\\tat io.x.Task.poll(Task.java:42)\\n","worker_id":"10.0.0.6:8083","generation":8,"version":null}',
    )
    assert rec.task_status_record("jdbc-src", 1, None) == Record(
        "status", b"status-task-jdbc-src-1", None
    )


def test_status_round_trip_and_tolerance() -> None:
    value = b'{"state":"FAILED","trace":"x\\n\\ty","worker_id":"w:1","generation":3}'
    assert rec.decode_status(value) == InstanceStatus(
        state=InstanceState.FAILED, trace="x\n\ty", worker_id="w:1", generation=3
    )
    no_worker = rec.decode_status(b'{"state":"UNASSIGNED","trace":null,"generation":1}')
    assert no_worker == InstanceStatus(state=InstanceState.UNASSIGNED, worker_id=None, generation=1)
    # Kafka 4.x adds the plugin version; Java reads a DESTROYED value back like any state.
    versioned = b'{"state":"RUNNING","trace":null,"worker_id":"w","generation":2,"version":"4.3.1"}'
    decoded = rec.decode_status(versioned)
    assert decoded == InstanceStatus(state=InstanceState.RUNNING, worker_id="w", generation=2, version="4.3.1")
    assert rec.encode_status(decoded) == versioned
    destroyed = rec.decode_status(b'{"state":"DESTROYED","trace":null,"worker_id":"w","generation":1}')
    assert not isinstance(destroyed, Invalid) and destroyed.state is InstanceState.DESTROYED


@pytest.mark.parametrize(
    "value",
    [
        b'{"state":"EXPLODED","trace":null,"worker_id":"w","generation":1}',
        b'{"state":"RUNNING","trace":null,"worker_id":"w","generation":1,"version":4}',
        b'{"state":"RUNNING","trace":null,"worker_id":"w"}',  # no generation: Java's NPE
        b'{"state":"RUNNING","trace":null,"worker_id":"w","generation":"1"}',
        b'{"state":"RUNNING","trace":5,"worker_id":"w","generation":1}',
        b'"RUNNING"',
    ],
)
def test_unparseable_statuses_are_invalid(value: bytes) -> None:
    assert isinstance(rec.decode_status(value), Invalid)


def test_topic_status_record() -> None:
    assert record_encoders.topic_status_record("orders", "archive-sink", 0, 1700000000123) == Record(
        "status",
        b"status-topic-orders:connector-archive-sink",
        b'{"topic":{"name":"orders","connector":"archive-sink","task":0,'
        b'"discoverTimestamp":1700000000123}}',
    )
    assert record_encoders.topic_status_record("orders", "archive-sink", 0, None).value is None


# --- offsets topic --------------------------------------------------------------------------------


def test_source_offset_key_and_value_like_java() -> None:
    record = record_encoders.source_offset_record("jdbc-src", {"table": "orders"}, {"incrementing": 1234})
    assert record == Record("offsets", b'["jdbc-src",{"table":"orders"}]', b'{"incrementing":1234}')
    unicode_key = rec.encode_offset_key("jdbc-src", {"table": "Bestellungen-ü"})
    assert unicode_key == '["jdbc-src",{"table":"Bestellungen-ü"}]'.encode()
    tombstone = record_encoders.source_offset_record("jdbc-src", {"table": "orders"}, None)
    assert tombstone.value is None


def test_offset_writes_reuse_raw_key_bytes() -> None:
    java_bytes = b'["file-src",{"path":"/a","line":1}]'
    record = record_encoders.source_offset_record("file-src", {"line": 1, "path": "/a"}, {"pos": 9}, raw_key=java_bytes)
    assert record.key == java_bytes


def test_offset_values_print_doubles_as_java_does() -> None:
    value = {"a": 1.0, "b": 1e10, "c": 1.5e-7, "d": 0.001, "e": -0.0, "f": True, "g": None, "h": 10}
    assert rec.encode_offset_value(value) == (
        b'{"a":1.0,"b":1.0E10,"c":1.5E-7,"d":0.001,"e":-0.0,"f":true,"g":null,"h":10}'
    )


@pytest.mark.parametrize(
    ("number", "text"),
    [
        (1.0, "1.0"),
        (123.456, "123.456"),
        (9999999.0, "9999999.0"),
        (1e7, "1.0E7"),
        (12345678.9, "1.23456789E7"),
        (0.001, "0.001"),
        (0.0001, "1.0E-4"),
        (-2.5e-5, "-2.5E-5"),
        (1e22, "1.0E22"),
        (100.0, "100.0"),
        (1.7976931348623157e308, "1.7976931348623157E308"),
    ],
)
def test_java_double(number: float, text: str) -> None:
    assert rec.java_double(number) == text


def test_offset_maps_must_be_flat() -> None:
    with pytest.raises(ValueError, match="primitive"):
        rec.encode_offset_value({"nested": {"a": 1}})
    with pytest.raises(ValueError):
        rec.encode_offset_key("c", {"x": float("inf")})


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        (b'["jdbc-src",{"table":"orders"}]', ("jdbc-src", {"table": "orders"})),
        (b'["jdbc-src", {"table" : "orders"}]', ("jdbc-src", {"table": "orders"})),
    ],
)
def test_offset_key_decoding(key: bytes, expected: tuple[str, dict[str, object]]) -> None:
    assert rec.decode_offset_key(key) == expected


@pytest.mark.parametrize(
    ("key", "quiet"),
    [
        (b'["jdbc-src",null]', True),  # Java skips this silently
        (b'["jdbc-src",{"a":1},3]', False),
        (b'[1,{"a":1}]', False),
        (b'["jdbc-src","orders"]', False),
        (b'{"name":"jdbc-src"}', False),
        (b"garbage", False),
    ],
)
def test_offset_key_shapes_java_ignores(key: bytes, quiet: bool) -> None:
    decoded = rec.decode_offset_key(key)
    assert isinstance(decoded, Invalid)
    assert decoded.quiet is quiet


def test_offset_value_decoding() -> None:
    assert rec.decode_offset_value(b'{"position":30}') == {"position": 30}
    assert isinstance(rec.decode_offset_value(b"30"), Invalid)


# --- our topic ------------------------------------------------------------------------------------


def test_reconciler_topic_records_are_byte_exact() -> None:
    assert own.owner_record("jdbc-src", "3f2a9c") == Record(
        "reconciler",
        b"owner/jdbc-src",
        b'{"owner":"connect-reconciler","created-by-plan":"3f2a9c"}',
    )
    assert own.owner_tombstone("jdbc-src") == Record("reconciler", b"owner/jdbc-src", None)
    assert own.applied_record("restart", "jdbc-src", "2026-11/r1", 1700000000000) == Record(
        "reconciler", b"applied/restart/jdbc-src/2026-11/r1", b'{"applied-at":1700000000000}'
    )
    assert own.applied_record("offsets", "jdbc-src", "o1", 5).key == b"applied/offsets/jdbc-src/o1"
    assert own.offsets_progress_record("jdbc-src", "o1", "snapshot") == Record(
        "reconciler", b"offsets-progress/jdbc-src", b'{"id":"o1","step":"snapshot"}'
    )
    assert own.offsets_progress_tombstone("jdbc-src").value is None
    snapshot = own.offsets_snapshot_record(
        "jdbc-src", "o1", [{"partition": {"table": "orders"}, "offset": {"id": 5}}], 9
    )
    assert snapshot == Record(
        "reconciler",
        b"offsets-snapshot/jdbc-src/o1",
        b'{"offsets":[{"partition":{"table":"orders"},"offset":{"id":5}}],"taken-at":9}',
    )


@pytest.mark.parametrize(
    "call",
    [
        lambda: own.owner_record("a/b", "p"),
        lambda: own.applied_record("restart", "a", "has space", 1),
        lambda: own.applied_record("restart", "a", "", 1),
        lambda: own.offsets_progress_record("a", "id", "rewind"),  # type: ignore[arg-type]
    ],
)
def test_reconciler_keys_refuse_ambiguous_names(call: object) -> None:
    with pytest.raises(ValueError):
        call()  # type: ignore[operator]


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("owner/jdbc-src", own.ReconcilerKey("owner", "jdbc-src", None)),
        ("applied/restart/jdbc-src/2026/11/r1", own.ReconcilerKey("applied-restart", "jdbc-src", "2026/11/r1")),
        ("applied/offsets/a.b_c/o-1", own.ReconcilerKey("applied-offsets", "a.b_c", "o-1")),
        ("offsets-progress/jdbc-src", own.ReconcilerKey("offsets-progress", "jdbc-src", None)),
        ("offsets-snapshot/jdbc-src/o/1", own.ReconcilerKey("offsets-snapshot", "jdbc-src", "o/1")),
        ("sensitive/jdbc-src", own.ReconcilerKey("sensitive", "jdbc-src", None)),
        ("sensitive/a/b", None),
        ("owner/", None),
        ("owner/a/b", None),
        ("applied/restart/jdbc-src", None),
        ("applied/restart/jdbc-src/", None),
        ("something/else", None),
    ],
)
def test_reconciler_key_parsing(key: str, expected: own.ReconcilerKey | None) -> None:
    assert own.parse_reconciler_key(key) == expected


def test_reconciler_value_decoders() -> None:
    assert own.decode_owner(b'{"owner":"connect-reconciler","created-by-plan":"ab"}') == own.OwnerInfo(
        "connect-reconciler", "ab"
    )
    assert own.decode_applied(b'{"applied-at":17}') == 17
    assert own.decode_offsets_progress(b'{"id":"o1","step":"alter"}') == own.OffsetsProgress("o1", "alter")
    assert own.decode_offsets_snapshot(b'{"offsets":[],"taken-at":3}') == own.OffsetsSnapshot([], 3)
    record = own.sensitive_record("jdbc-src", ["table", "conn.uri"])
    assert (record.key, record.value) == (b"sensitive/jdbc-src", b'{"keys":["conn.uri","table"]}')
    assert own.sensitive_record("jdbc-src", []).value is None  # none left: a tombstone
    assert own.decode_sensitive(record.value or b"") == ["conn.uri", "table"]
    for bad in (
        own.decode_sensitive(b'{"keys":"table"}'),
        own.decode_sensitive(b'{"keys":[1]}'),
        own.decode_owner(b"[]"),
        own.decode_applied(b'{"applied-at":"x"}'),
        own.decode_offsets_progress(b'{"id":"o1","step":"rewind"}'),
        own.decode_offsets_progress(b'{"id":"o1","step":["stop"]}'),
        own.decode_offsets_snapshot(b'{"offsets":[1],"taken-at":3}'),
        own.decode_offsets_snapshot(b'{"offsets":[]}'),
    ):
        assert isinstance(bad, Invalid)
