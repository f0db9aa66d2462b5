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


def _batch(base_offset: int, leader_epoch: int, payload: bytes) -> bytes:
    """A stand-in record batch: the header fields the comparison reads, then `payload`."""
    rest = leader_epoch.to_bytes(4, "big") + payload   # partitionLeaderEpoch, then the rest of the batch
    return base_offset.to_bytes(8, "big") + len(rest).to_bytes(4, "big") + rest


def _write_logs(data_dir, logs: dict[int, bytes]) -> None:
    for topic in drill.TOPICS:
        for broker, data in logs.items():
            part = data_dir / f"broker-{broker}" / "logs" / f"{topic}-0"
            part.mkdir(parents=True)
            (part / "00000000000000000000.log").write_bytes(data)


def test_replica_logs_are_compared_with_the_leader_s_but_for_leader_epochs(tmp_path) -> None:
    leader = _batch(0, 1, b"a" * 20) + _batch(1, 2, b"b" * 30)
    _write_logs(tmp_path, {0: leader, 1: _batch(0, 7, b"a" * 20), 2: _batch(0, 1, b"a" * 20) + _batch(1, 5, b"b" * 30)})
    assert drill.compare_replica_logs(tmp_path, 1, {f"{t}-0": 0 for t in drill.TOPICS}) == []


def test_a_replica_that_differs_from_its_leader_is_named(tmp_path) -> None:
    """Broker 1's log is the longest, but it is not the leader's prefix: the leader's is the reference."""
    _write_logs(tmp_path, {0: _batch(0, 1, b"a" * 20), 1: _batch(0, 1, b"x" * 20) + _batch(1, 1, b"b" * 30),
                           2: _batch(0, 1, b"a" * 20)})
    problems = drill.compare_replica_logs(tmp_path, 1, {f"{t}-0": 0 for t in drill.TOPICS})
    assert problems == [f"{t}-0: broker 1's log ({2 * 12 + 4 + 20 + 4 + 30} B) is not a prefix of leader 0's (36 B)"
                        for t in drill.TOPICS]


class Delivered:
    """A delivery report for one record of `partition`."""

    def __init__(self, partition: int, offset: int) -> None:
        self._partition, self._offset = partition, offset

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def value(self) -> bytes:
        return b"record-%08d" % self._offset


@pytest.fixture
def producer(monkeypatch: pytest.MonkeyPatch) -> drill.AckedProducer:
    """The drill's producer (bench/replication.py's too) with no client behind it and a clock the
    test sets: acknowledgements are handed to it as confluent-kafka's delivery callback would."""
    import confluent_kafka

    monkeypatch.setattr(confluent_kafka, "Producer", lambda config: SimpleNamespace(config=config))
    now = SimpleNamespace(t=0.0)
    monkeypatch.setattr(drill.time, "monotonic", lambda: now.t)
    made = drill.AckedProducer("127.0.0.1:1", "drill", idempotence=False, rate_per_s=10)
    made.now = now
    return made


def test_the_first_ack_after_a_mark_is_the_earliest_per_partition_of_records_sent_since(producer) -> None:
    def ack(partition: int, offset: int, sent: float, at: float) -> None:
        producer.now.t = at
        producer._on_delivery(sent, None, Delivered(partition, offset))

    ack(0, 0, sent=1.0, at=1.5)            # before the mark: kept for the read-back check, not timed
    producer.mark(2.0)
    ack(0, 1, sent=1.9, at=2.6)            # sent before the kill: not a failover's first ack
    ack(1, 0, sent=2.1, at=3.4)
    ack(0, 2, sent=2.2, at=3.0)
    ack(0, 3, sent=2.0, at=3.2)            # sent earlier, acknowledged later: the earlier ack counts
    assert producer.first_acks(2.0) == {0: 3.0, 1: 3.4}
    assert producer.first_acks(2.15) == {0: 3.0}
    assert producer.count() == 5 and producer.acked[(0, 0)] == b"record-00000000"


def test_a_failed_delivery_is_counted_by_its_error_name(producer) -> None:
    producer._on_delivery(1.0, SimpleNamespace(name=lambda: "_MSG_TIMED_OUT"), Delivered(0, 0))
    assert producer.errors == {"_MSG_TIMED_OUT": 1} and producer.count() == 0


def test_the_producer_is_acks_all_with_the_drills_client_settings(producer) -> None:
    config = producer._producer.config
    assert config["acks"] == "all" and config["enable.idempotence"] is False
    assert {k: config[k] for k in drill.ACKED_PRODUCER_CONFIG} == drill.ACKED_PRODUCER_CONFIG
