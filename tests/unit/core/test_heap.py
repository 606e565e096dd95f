"""reconciler.heap: no cyclic collection while building; freezing only in one-shot commands."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from reconciler import heap


@pytest.fixture(autouse=True)
def _restore_gc() -> Iterator[None]:
    assert gc.isenabled()
    yield
    gc.unfreeze()  # what a test froze goes back to the collector
    gc.enable()


def test_building_pauses_collection_and_freezes_nothing_in_a_long_running_process() -> None:
    frozen = gc.get_freeze_count()
    with heap.building():
        assert not gc.isenabled()
        built: list[list[int]] = [[] for _ in range(1000)]
    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen
    assert len(built) == 1000


def test_a_one_shot_command_freezes_what_it_built() -> None:
    frozen = gc.get_freeze_count()
    with heap.one_shot():
        with heap.building():
            built: list[list[int]] = [[] for _ in range(1000)]
    assert gc.isenabled()
    assert gc.get_freeze_count() >= frozen + len(built)
    with heap.building():  # one_shot ended with the command
        pass
    assert gc.get_freeze_count() >= frozen + len(built)


def test_a_failure_inside_re_enables_collection_and_freezes_nothing() -> None:
    frozen = gc.get_freeze_count()
    with heap.one_shot(), pytest.raises(ValueError), heap.building():
        raise ValueError("boom")
    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen


def test_building_inside_a_disabled_collector_leaves_it_disabled() -> None:
    gc.disable()
    with heap.one_shot(), heap.building():
        pass
    assert not gc.isenabled()
