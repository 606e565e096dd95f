"""A task's producer transactional id, as Connect names it (`kafka.io.produce.task_transactional_id`)."""

from __future__ import annotations

from reconciler.kafka.io.produce import task_transactional_id as transactional_id


def test_transactional_id_is_connects() -> None:
    assert transactional_id("connect-cluster", "orders", 3) == "connect-cluster-orders-3"
