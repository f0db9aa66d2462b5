"""`Cluster.start`'s brokers start at once (configured ids) or in turn (generated ids), and
`brokers` lists them by id whatever order they came up in (no Ray: `start_broker` stands in)."""
from __future__ import annotations

import threading

import pytest

from rafka.cluster import BrokerHandle, Cluster
from rafka.common.config import BrokerConfig


class Recording(Cluster):
    """Starts nothing: notes how many starts overlap, and finishes the highest id first."""

    def __init__(self, fail_id: int | None = None) -> None:
        super().__init__("/nonexistent", brokers=3)
        self.fail_id = fail_id
        self.running = self.most_at_once = 0
        self.ended: list[int] = []
        self._lock = threading.Condition()
        self._all_in = threading.Barrier(3, timeout=10)

    def start_broker(self, config: BrokerConfig, stale_registration_wait_s: float = 0.0, detached: bool = False,
                     timeout_s: float = 120.0) -> BrokerHandle:
        with self._lock:
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
        try:
            if config.broker_id >= 0:
                self._all_in.wait()   # breaks (and fails the test) unless all three start together
                with self._lock:      # the highest id ends first, then each waits for the one above
                    assert self._lock.wait_for(lambda: config.broker_id == 2 or config.broker_id + 1 in self.ended,
                                               timeout=10)
            if config.broker_id == self.fail_id:
                raise RuntimeError(f"broker {config.broker_id} failed")
            handle = BrokerHandle(config.broker_id, "127.0.0.1", 9092 + config.broker_id, None)
            self.brokers[handle.broker_id] = handle
            return handle
        finally:
            with self._lock:
                self.running -= 1
                self.ended.append(config.broker_id)
                self._lock.notify_all()


def configs(first_id: int) -> list[BrokerConfig]:
    return [BrokerConfig().replace(broker_id=first_id + i if first_id >= 0 else -1) for i in range(3)]


def test_brokers_of_configured_ids_start_at_once_and_are_listed_by_id():
    cluster = Recording()
    cluster._start_brokers(configs(0))
    assert cluster.most_at_once == 3 and cluster.ended == [2, 1, 0]
    assert list(cluster.brokers) == [0, 1, 2]
    assert cluster.bootstrap_servers == "127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094"


def test_brokers_of_generated_ids_start_in_turn():
    cluster = Recording()
    cluster._start_brokers(configs(-1))
    assert cluster.most_at_once == 1


def test_a_failed_start_is_raised_once_the_others_have_ended():
    cluster = Recording(fail_id=1)
    with pytest.raises(RuntimeError, match="broker 1 failed"):
        cluster._start_brokers(configs(0))
    assert sorted(cluster.ended) == [0, 1, 2] and list(cluster.brokers) == [0, 2]
