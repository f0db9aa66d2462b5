"""The broker's report of its offline replicas: latest set wins, retried until written, and a
write abandoned on its timeout never overwrites a later one (a stand-in for ZooKeeper's
conditional writes; the real store is exercised in tests/cluster/test_zk_store.py)."""
from __future__ import annotations

import asyncio
import logging
import threading

from rafka.common.types import TopicPartition
from rafka.coordinator.broker.offline_report import OfflineReplicaReport
from rafka.coordinator.zk.zk_data import LOG_DIR_FAILURE_EVENT, REPLICAS_ONLINE_EVENT
from rafka.coordinator.zk.zk_errors import ZnodeVersionConflictError

A0, A1 = TopicPartition("a", 0), TopicPartition("a", 1)
log = logging.getLogger(__name__)


class FakeStore:
    """One znode with a version, written conditionally; `delays`/`failures` script the next calls."""

    def __init__(self, stored: frozenset = frozenset(), version: int = -1) -> None:
        self.stored, self.version = stored, version
        self.events: list[tuple[frozenset, int]] = []
        self.failures = 0
        self.delays: list[float] = []
        self.late_refusals: list[Exception] = []
        self._lock = threading.Lock()

    def read_offline_replicas(self, broker_id: int, timeout_s: float) -> tuple[frozenset, int]:
        with self._lock:
            return self.stored, self.version

    def write_offline_replicas(self, broker_id, partitions, expected_version, event, timeout_s) -> int:
        """As kazoo's call with a timeout: a delayed write gives up waiting after `timeout_s`,
        and still reaches the server later."""
        if self.delays:
            outcome: list = []
            done = threading.Event()

            def late() -> None:
                try:
                    outcome.append(self._write(partitions, expected_version, event))
                except Exception as e:  # noqa: BLE001 - the late write's refusal
                    self.late_refusals.append(e)
                done.set()

            threading.Timer(self.delays.pop(0), late).start()
            if not done.wait(timeout_s):
                raise TimeoutError("no answer in time")
            return outcome[0]
        return self._write(partitions, expected_version, event)

    def _write(self, partitions, expected_version, event) -> int:
        with self._lock:
            if self.failures:
                self.failures -= 1
                raise ConnectionError("ZooKeeper away")
            if expected_version != self.version:
                raise ZnodeVersionConflictError("moved")
            self.stored, self.version = frozenset(partitions), self.version + 1
            self.events.append((self.stored, event))
            return self.version


def run(coro):
    return asyncio.run(coro)


def test_a_replica_going_offline_then_back_is_reported_with_kafkas_failure_event_then_ours():
    store = FakeStore(stored=frozenset({A1}), version=4)   # a previous incarnation's report

    async def scenario() -> None:
        report = OfflineReplicaReport(1, store, log, retry_backoff_s=0.01)
        report.report(())
        assert await report.settled(5)
        report.report([A0])
        assert await report.settled(5)
        report.report([])
        assert await report.settled(5)
        report.report([])           # unchanged: nothing written
        assert await report.settled(5)
        report.stop()

    run(scenario())
    assert store.events == [(frozenset(), REPLICAS_ONLINE_EVENT), (frozenset({A0}), LOG_DIR_FAILURE_EVENT),
                            (frozenset(), REPLICAS_ONLINE_EVENT)]


def test_changes_during_a_write_fold_into_the_next_and_failures_are_retried():
    store = FakeStore()
    store.failures = 2

    async def scenario() -> None:
        report = OfflineReplicaReport(1, store, log, retry_backoff_s=0.01)
        report.report([A0])
        report.report([A0, A1])     # before the writer ran: only the latest is written
        assert await report.settled(5)
        assert report.reported == {A0, A1}
        report.stop()

    run(scenario())
    assert store.events == [(frozenset({A0, A1}), LOG_DIR_FAILURE_EVENT)]


def test_a_write_abandoned_on_its_timeout_never_overwrites_a_later_one():
    store = FakeStore(version=0)
    store.delays = [0.5]            # the first write hangs past its timeout, then lands late

    async def scenario() -> None:
        report = OfflineReplicaReport(1, store, log, timeout_s=0.05, retry_backoff_s=0.01)
        report.report([A0])
        await asyncio.sleep(0.1)    # the first attempt is abandoned meanwhile
        report.report([])
        assert await report.settled(5)
        await asyncio.sleep(0.6)    # the abandoned write lands now, and is refused
        report.stop()

    run(scenario())
    assert store.stored == frozenset() and store.events[-1] == (frozenset(), REPLICAS_ONLINE_EVENT)
    assert [type(e) for e in store.late_refusals] == [ZnodeVersionConflictError]
