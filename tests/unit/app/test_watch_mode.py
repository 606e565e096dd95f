"""Watch mode without a broker: which file events count, the fingerprint that decides whether
the manifests changed (on real inotify events, with a ConfigMap-style volume), the resync
schedule of the loop, the grace period after SIGTERM, and structured logs."""

from __future__ import annotations

import io
import json
import logging
import shutil
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from configmap_volume import ConfigMapVolume
from polling import until

from reconciler.logs import JsonFormatter
from reconciler.cli.progress import BatchProgress, with_progress
from reconciler.cli.tick_output import TextOutput
from reconciler.app.reload import Manifests
from reconciler.core.plan import Plan
from reconciler.manifests import load_or_raise
from reconciler.manifests.watch import MAX_BURST_MS, fingerprint, is_editor_temp, watch_files, watch_targets
from reconciler.runtime.batch.tasks import TaskOutcome, TaskWork
from reconciler.app.loop import GRACE_EXCEEDED_EXIT, Stopper, run_loop

ROOT = Path(__file__).resolve().parents[3]


def manifest(name: str, state: str = "running") -> str:
    return textwrap.dedent(
        f"""\
        apiVersion: reconciler.io/v1
        kind: Connector
        metadata: {{name: {name}}}
        spec: {{class: datagen, state: {state}, config: {{topic: t, count: 1}}}}
        """
    )


@pytest.mark.parametrize(
    ("name", "temp"),
    [
        (".c.yaml.swp", True), (".c.yaml.swx", True), ("c.yaml~", True), (".#c.yaml", True), ("#c.yaml#", True),
        ("4913", True), ("c.yaml___jb_tmp___", False), ("c.yaml.___jb_old___", True), ("c.yaml.kate-swp", True),
        (".goutputstream-XYZ12", True), ("c.yaml.tmp", True),
        ("c.yaml", False), ("..data", False), ("..data_tmp", False), ("..2026_01_01", False), ("4913.yaml", False),
    ],
)
def test_editor_temporaries_are_recognised(name: str, temp: bool) -> None:
    assert is_editor_temp(f"/m/{name}") is temp


def test_fingerprint_changes_with_content_and_deletions_only(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(manifest("a"))
    (tmp_path / "b.yaml").write_text(manifest("b"))
    before = fingerprint([str(tmp_path)])
    (tmp_path / "a.yaml").write_text(manifest("a"))  # same bytes
    (tmp_path / ".a.yaml.swp").write_text("x")
    (tmp_path / "notes.txt").write_text("x")
    assert fingerprint([str(tmp_path)]) == before
    (tmp_path / "a.yaml").write_text(manifest("a", "paused"))
    edited = fingerprint([str(tmp_path)])
    assert edited != before
    (tmp_path / "b.yaml").unlink()
    assert fingerprint([str(tmp_path)]) != edited
    shutil.rmtree(tmp_path)
    assert fingerprint([str(tmp_path)])[0][0] == "!problem"  # a path that is gone is a change too


def test_a_configmap_swap_changes_the_fingerprint_once(tmp_path: Path) -> None:
    volume = ConfigMapVolume(tmp_path / "m")
    volume.publish({"a.yaml": manifest("a")})
    first = fingerprint([str(volume.root)])
    assert [Path(f).name for f, _ in first] == ["a.yaml"]  # `..data` and `..2026_01` are not read twice
    volume.publish({"a.yaml": manifest("a")})  # the same content, republished
    assert fingerprint([str(volume.root)]) == first
    volume.publish({"a.yaml": manifest("a", "paused"), "b.yaml": manifest("b")})
    assert [Path(f).name for f, _ in fingerprint([str(volume.root)])] == ["a.yaml", "b.yaml"]


def test_watch_targets_are_directories(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(manifest("a"))
    (tmp_path / "d").mkdir()
    assert watch_targets([str(tmp_path / "a.yaml"), str(tmp_path / "d"), str(tmp_path)]) == [
        str(tmp_path), str(tmp_path / "d")
    ]


class Recorder:
    """What `watch` would be told: notices, reloads, and problems."""

    def __init__(self) -> None:
        self.notices: list[str] = []
        self.invalid = 0

    def notice(self, message: str, **fields: object) -> None:
        self.notices.append(message)

    def invalid_manifests(self, diagnostics: object) -> None:
        self.invalid += 1


def quiet(changes: list[bool]) -> list[bool]:
    """The changes once a whole burst window has passed without a new one: that nothing more
    came can only be seen by waiting for longer than a burst may last."""
    window_s = MAX_BURST_MS / 1000 + 0.5
    count = -1
    while count != len(changes):
        count = len(changes)
        time.sleep(window_s)
    return list(changes)


def watched(volume_root: Path) -> tuple[Manifests, list[bool], threading.Event, threading.Thread]:
    """The manifests, watched from a thread; returned once the watch sees events (a file that
    is no manifest changes nothing: its bursts count False)."""
    paths = [str(volume_root)]
    manifests = Manifests(paths, load_or_raise(paths), Recorder())  # type: ignore[arg-type]
    changes: list[bool] = []
    stop = threading.Event()
    thread = threading.Thread(target=watch_files, args=(paths, lambda: changes.append(manifests.notice()), stop))
    thread.start()
    probe = volume_root / "probe.txt"
    deadline = time.monotonic() + 15
    while not changes:
        assert time.monotonic() < deadline, "the watch saw no event"
        probe.write_text(str(time.monotonic()))
        time.sleep(0.1)
    probe.unlink()
    quiet(changes)
    changes.clear()
    return manifests, changes, stop, thread


def test_real_events_a_swap_is_one_change_temporaries_none_deletion_one(tmp_path: Path) -> None:
    volume = ConfigMapVolume(tmp_path / "m")
    volume.publish({"a.yaml": manifest("a"), "b.yaml": manifest("b")})
    manifests, changes, stop, thread = watched(volume.root)
    try:
        for name in (".a.yaml.swp", "a.yaml~", "4913", ".#a.yaml"):
            (volume.root / name).write_text("x")
        assert quiet(changes) == []  # not even a burst

        volume.publish({"a.yaml": manifest("a", "paused"), "b.yaml": manifest("b")})
        until(lambda: True in changes)
        assert quiet(changes).count(True) == 1
        desired, _ = manifests()
        assert {d.name: d.spec.state.value for d in desired} == {"a": "paused", "b": "running"}
        changes.clear()

        volume.publish({"a.yaml": manifest("a", "paused")})  # b deleted
        until(lambda: True in changes)
        assert quiet(changes).count(True) == 1
        assert [d.name for d in manifests()[0]] == ["a"]
        assert manifests.reloads == 2
    finally:
        stop.set()
        thread.join(10)


def test_watching_is_set_up_again_when_it_fails(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    later = tmp_path / "volume" / "later"  # not there yet, nor its parent: watching fails
    calls: list[int] = []
    stop = threading.Event()
    thread = threading.Thread(target=watch_files, args=([str(later)], lambda: calls.append(1), stop))
    thread.start()
    try:
        until(lambda: "watching" in caplog.text and "trying again" in caplog.text)
        later.mkdir(parents=True)
        deadline = time.monotonic() + 15
        while not calls and time.monotonic() < deadline:
            (later / "a.yaml").write_text(manifest("a"))
            time.sleep(0.5)
        assert calls
    finally:
        stop.set()
        thread.join(10)


def test_invalid_files_keep_the_last_valid_manifests_until_fixed(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(manifest("a"))
    recorder = Recorder()
    manifests = Manifests([str(tmp_path)], load_or_raise([str(tmp_path)]), recorder)  # type: ignore[arg-type]
    (tmp_path / "a.yaml").write_text(manifest("a").replace("datagen", "[oops"))
    assert manifests.notice()
    assert [d.spec.state.value for d in manifests()[0]] == ["running"]
    assert recorder.invalid == 1 and manifests.valid is False
    assert not manifests.notice()  # the broken content was seen: no reload loop
    (tmp_path / "a.yaml").write_text(manifest("a", "stopped"))
    assert manifests.notice()
    assert [d.spec.state.value for d in manifests()[0]] == ["stopped"] and manifests.valid


# --- the loop ------------------------------------------------------------------------------


def test_resync_runs_only_while_no_tick_does() -> None:
    stopper = Stopper()
    calls: list[str] = []

    def tick() -> None:
        calls.append("tick")
        if calls.count("tick") == 2:
            stopper.request_stop()

    def resync() -> None:
        calls.append("resync")
        if calls.count("resync") == 3:
            stopper.wake.set()  # as a file change does: a tick, not a resync

    run_loop(tick, interval_s=60, stopper=stopper, on_error=pytest.fail, resync=resync, resync_s=0.05)
    assert calls == ["tick", "resync", "resync", "resync", "tick"]


CHILD = """
import sys, time
from reconciler.app.loop import Stopper, run_loop
stopper = Stopper(grace_s=float(sys.argv[1]))
stopper.install()
def tick():
    print("batch", flush=True)
    time.sleep(float(sys.argv[2]))  # the batch's work: its length is what the tests vary
run_loop(tick, interval_s=60, stopper=stopper, on_error=print)
stopper.finished()
print("stopped", flush=True)
"""


def child(grace_s: float, batch_s: float) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(grace_s), str(batch_s)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    assert process.stdout is not None and process.stdout.readline() == "batch\n"
    return process


def test_sigterm_lets_the_batch_finish_within_the_grace_period() -> None:
    process = child(grace_s=10, batch_s=1)
    process.terminate()
    out, err = process.communicate(timeout=30)
    assert process.returncode == 0 and out == "stopped\n"
    assert "SIGTERM: finishing the current batch, then stopping (grace period 10 s)" in err


def test_past_the_grace_period_the_process_exits_at_once() -> None:
    process = child(grace_s=0.5, batch_s=60)
    started = time.monotonic()
    process.terminate()
    out, err = process.communicate(timeout=30)
    assert process.returncode == GRACE_EXCEEDED_EXIT and time.monotonic() - started < 10
    assert "grace period of 0.5 s exceeded" in err and out == ""


def test_a_second_signal_exits_at_once() -> None:
    process = child(grace_s=60, batch_s=60)
    process.terminate()
    assert process.stderr is not None and process.stderr.readline().startswith("SIGTERM: finishing")  # handled
    process.terminate()
    _, err = process.communicate(timeout=30)
    assert process.returncode == 130 and "SIGTERM again: exiting now" in err


# --- output --------------------------------------------------------------------------------


def test_json_log_lines_carry_the_events_fields() -> None:
    record = logging.LogRecord("reconciler.events", logging.INFO, __file__, 1, "tick done", None, None)
    record.fields = {"event": "tick", "records_moved": 3}
    doc = json.loads(JsonFormatter().format(record))
    assert doc["event"] == "tick" and doc["records_moved"] == 3 and doc["message"] == "tick done"
    assert doc["level"] == "info" and doc["logger"] == "reconciler.events" and doc["time"].endswith("Z")
    plain = logging.LogRecord("py4j", logging.WARNING, __file__, 1, "a %s", ("library",), None)
    assert json.loads(JsonFormatter().format(plain))["event"] == "log"


def test_each_orphan_is_reported_once_when_it_becomes_one(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    output = TextOutput()
    with caplog.at_level(logging.WARNING, logger="reconciler.run"):
        for orphans in (["x"], ["x"], ["x", "y"], []):
            output._orphans_of(Plan(orphans=orphans))
    warned = [r.getMessage().split(" is in no manifest")[0] for r in caplog.records]
    assert warned == ["orphan: connector x", "orphan: connector y"]
    assert capsys.readouterr().out.splitlines() == [
        "orphaned connectors (created by this reconciler, in no manifest; deleted only with --prune): none"]


class SlowExecutor:
    def __init__(self) -> None:
        self.closed = False

    def run_batch(self, works: object, *, closing: bool = False) -> list[TaskOutcome]:
        time.sleep(0.4)  # a batch long enough to be shown
        return []

    def close(self) -> None:
        self.closed = True


def test_progress_shows_on_a_terminal_for_long_batches_only() -> None:
    from rich.console import Console

    work = TaskWork(connector="c", task_id=0, connector_class="datagen", kind="source", connector_config={}, task_config={})
    screen = io.StringIO()
    inner = SlowExecutor()
    progress = BatchProgress(inner, Console(file=screen, force_terminal=True), delay_s=0.1)
    progress.run_batch([work])
    assert "batch: 1 task(s) of 1 connector(s) running" in screen.getvalue()
    quick = io.StringIO()
    BatchProgress(inner, Console(file=quick, force_terminal=True), delay_s=5).run_batch([work])
    assert quick.getvalue() == ""
    progress.close()
    assert inner.closed
    # Not a terminal (pytest captures stderr), or JSON logs: no wrapper at all.
    assert with_progress(inner, "text") is inner and with_progress(inner, "json") is inner


def test_text_warnings_are_log_lines_stamped_in_utc(capsys: pytest.CaptureFixture[str]) -> None:
    """README: log lines (stderr) start with a UTC timestamp, warnings as errors do; an invalid
    edit's diagnostics go under its line, as a hint under an error."""
    import re

    from reconciler.core.diagnostics import Diagnostic, Severity

    output = TextOutput()
    output.warning("SIGTERM: finishing the current batch, then stopping")
    output.invalid_manifests(
        [Diagnostic(severity=Severity.ERROR, summary="must be an integer", field_path="spec.tasksMax")]
    )
    lines = capsys.readouterr().err.splitlines()
    stamp = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z "
    assert re.fullmatch(stamp + "SIGTERM: finishing the current batch, then stopping", lines[0])
    assert re.fullmatch(stamp + "manifests changed but are invalid; still running the previous valid ones", lines[1])
    assert lines[2:] == ["  spec.tasksMax: must be an integer"]
