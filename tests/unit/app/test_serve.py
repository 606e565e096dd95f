"""`app.serve` without a broker or Spark: what one tick of the loop tells the output and the REST
API's observer, a resync pass that finds the files changed, and what a stop reports."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from reconciler.app.loop import Stopper
from reconciler.app.reload import FixedManifests, Manifests
from reconciler.app.serve import make_tick, releasing, resync_pass
from reconciler.app.tick import TickReport
from reconciler.core.models import DesiredConnector
from reconciler.core.outcomes import TaskOutcome
from reconciler.errors import BrokerUnreachable, ReconcilerError
from reconciler.manifests import load_or_raise


class Output:
    """What `run`/`watch` would print, as calls."""

    def __init__(self) -> None:
        self.said: list[str] = []

    def report(self, report: TickReport) -> None:
        self.said.append(f"report {report.config_end}")

    def resynced(self, applied: object, offsets: object) -> None:
        self.said.append("resynced")

    def applied_before_failure(self, applied: object) -> None:
        self.said.append("applied before failure")

    def error(self, exc: ReconcilerError) -> None:
        self.said.append(f"error {exc.message}")

    def notice(self, message: str, **fields: Any) -> None:
        self.said.append(message)

    def warning(self, message: str, **fields: Any) -> None:
        self.said.append(f"warning {message}")

    def invalid_manifests(self, diagnostics: object) -> None:
        self.said.append("invalid")

    def manifests_still_invalid(self, problems: int) -> None:
        self.said.append(f"still invalid: {problems}")


class Runner:
    """A tick runner whose ticks are scripted: an apply error to report, or an error to raise."""

    def __init__(self, *, apply_error: ReconcilerError | None = None, raises: ReconcilerError | None = None) -> None:
        self.apply_error, self.raises = apply_error, raises
        self.ticks: list[list[str]] = []
        self.applied = 0
        self.released: int | None = 0
        self.reached = True

    def tick(
        self, desired: Sequence[DesiredConnector], *, manifest_paths: Sequence[str], on_apply_error: Any, on_batch_error: Any
    ) -> TickReport:
        self.ticks.append([d.name for d in desired])
        if self.raises is not None:
            raise self.raises
        if self.apply_error is not None:
            on_apply_error(self.apply_error)
        return TickReport(config_end=7, outcomes=[TaskOutcome(connector="a", task_id=0, records=3)])

    def apply(self, desired: object, *, manifest_paths: object) -> object:
        self.applied += 1
        raise AssertionError("a changed file gets a tick, not a resync")

    def release(self) -> int | None:
        return self.released


class Observer:
    def __init__(self) -> None:
        self.seen: list[tuple[str, object]] = []

    def manifests(self, desired: Sequence[DesiredConnector], problems: Sequence[str]) -> None:
        self.seen.append(("manifests", [d.name for d in desired]))

    def finished(self, outcomes: Sequence[TaskOutcome], started_at: float, apply_error: object) -> None:
        self.seen.append(("finished", ([o.records for o in outcomes], apply_error)))

    def failed(self, error: ReconcilerError, started_at: float) -> None:
        self.seen.append(("failed", error.message))


def manifest(name: str, state: str = "running") -> str:
    return textwrap.dedent(
        f"""\
        apiVersion: reconciler.io/v1
        kind: Connector
        metadata: {{name: {name}}}
        spec: {{class: datagen, state: {state}, config: {{topic: t, count: 1}}}}
        """
    )


@pytest.fixture
def fixed(tmp_path: Path) -> FixedManifests:
    (tmp_path / "a.yaml").write_text(manifest("a"))
    return FixedManifests(load_or_raise([str(tmp_path)]), [str(tmp_path)])


def test_a_tick_is_reported_and_told_to_the_observer_with_its_outcomes(fixed: FixedManifests) -> None:
    runner, output, observer = Runner(apply_error=ReconcilerError("stale")), Output(), Observer()
    make_tick(runner, fixed, output, observer)()  # type: ignore[arg-type]
    assert runner.ticks == [["a"]]
    assert output.said == ["error stale", "report 7"]  # the apply failed; the batch still ran
    assert observer.seen[0] == ("manifests", ["a"])
    assert observer.seen[1][0] == "finished" and observer.seen[1][1][0] == [3]


def test_a_tick_that_raises_is_told_to_the_observer_and_raised(fixed: FixedManifests) -> None:
    runner, output, observer = Runner(raises=BrokerUnreachable("broker away")), Output(), Observer()
    with pytest.raises(BrokerUnreachable):
        make_tick(runner, fixed, output, observer)()  # type: ignore[arg-type]
    assert observer.seen == [("manifests", ["a"]), ("failed", "broker away")] and output.said == []


def test_a_resync_that_finds_the_files_changed_wakes_a_tick_instead(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(manifest("a"))
    output = Output()
    manifests = Manifests([str(tmp_path)], load_or_raise([str(tmp_path)]), output)  # type: ignore[arg-type]
    (tmp_path / "a.yaml").write_text(manifest("a", "paused"))
    stopper, runner = Stopper(), Runner()
    resync_pass(runner, manifests, output, stopper)  # type: ignore[arg-type]
    assert stopper.wake.is_set() and runner.applied == 0
    assert [d.spec.state.value for d in manifests()[0]] == ["paused"]  # the tick takes the new files
    assert output.said == ["manifests reloaded: 1 connector(s)"]


def test_a_stop_reports_the_statuses_it_released_and_what_it_could_not() -> None:
    runner, output = Runner(), Output()
    runner.released = 2
    with releasing(runner, output):  # type: ignore[arg-type]
        pass
    runner.released = None  # the broker was away: nothing tried
    with pytest.raises(KeyboardInterrupt), releasing(runner, output):  # type: ignore[arg-type]
        raise KeyboardInterrupt
    assert output.said == [
        "stopped: 2 status(es) now UNASSIGNED",
        "warning statuses this worker wrote still name it: the next run rewrites them",
    ]
