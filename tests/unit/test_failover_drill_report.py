"""A drill step that times out says what the cluster looked like then: each partition's leader
and ISR as a client sees them, and each broker's own status (or why it could not be had)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from tools import failover_drill as drill



class Admin:
    """Metadata of the drill's topics: one partition each, led by 0 with ISR [0, 1]."""

    def list_topics(self, timeout: float) -> SimpleNamespace:
        partition = SimpleNamespace(leader=0, isrs=[1, 0])
        return SimpleNamespace(topics={name: SimpleNamespace(error=None, partitions={0: partition})
                                       for name in drill.TOPICS})


class Cluster:
    def __init__(self, status: object) -> None:
        self.status = status

    def broker_status(self) -> dict:
        if isinstance(self.status, Exception):
            raise self.status
        return self.status


def test_a_timed_out_step_reports_the_isrs_and_the_brokers() -> None:
    cluster = Cluster({2: {"broker_id": 2, "error": "GetTimeoutError: no answer"}})
    with pytest.raises(AssertionError) as e:
        drill._wait_or_describe(lambda: False, 0.05, "cycle 2: broker 2 back in every ISR", cluster, Admin(), 1)
    text = str(e.value)
    assert text.startswith("cycle 2: broker 2 back in every ISR not met within 0.05 s; partitions (leader, ISR):")
    assert "('drill', 0): (0, (0, 1))" in text and "('drill-idempotent', 0): (0, (0, 1))" in text
    assert "brokers: {2: {'broker_id': 2, 'error': 'GetTimeoutError: no answer'}}" in text


def test_a_status_that_cannot_be_had_does_not_hide_the_timeout() -> None:
    with pytest.raises(AssertionError,
                       match=r"not met within 0.05 s; .* brokers: unavailable: RuntimeError\('ray is down'\)"):
        drill._wait_or_describe(lambda: False, 0.05, "cycle 0: failover away from broker 0",
                                Cluster(RuntimeError("ray is down")), Admin(), 1)


def test_a_step_that_succeeds_reports_nothing() -> None:
    drill._wait_or_describe(lambda: True, 0.05, "never shown", Cluster(RuntimeError("not asked")), Admin(), 1)
