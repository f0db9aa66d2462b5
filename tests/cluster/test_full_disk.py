"""A log dir on a small filesystem the test creates (a tmpfs), filled by a producer.

One broker with two log dirs (the small one and a normal one), RF=1: the produce that finds
the small dir full, and the next, are answered KAFKA_STORAGE_ERROR within the request timeout
(not left unanswered until the client gives up); consumers still read every acknowledged
record of the full dir; a topic on the other dir keeps taking writes, and a topic created
afterwards goes there. Three brokers, RF=3, one broker's log dir small: when it fills, that
broker's replica goes offline (the controller hears of it), its leadership moves to another
in-sync replica, and acks=all producers go on at once (the offline replica neither fetches
from the new leader nor is waited for) with every acknowledged record readable.

Each test's cluster has its own ZooKeeper, and its own Ray unless the session's runs already.
"""
from __future__ import annotations

import time
from pathlib import Path

from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.cluster.test_replica_death import partitions, read
from tests.small_fs import small_filesystem
from tests.waiting import wait_until

SMALL_FS_BYTES = 8 << 20
VALUE_BYTES = 64 << 10
REQUEST_TIMEOUT_MS = 15_000
PROMPT_S = 10.0   # a third of replica.lag.time.max.ms: an acks=all produce not waiting on a lost replica


def produce_one(producer: Producer, topic: str, value: bytes) -> tuple[KafkaError | None, int, float]:
    """One record, waited for: (error, offset, seconds until its delivery report)."""
    outcome: list = []
    started = time.monotonic()
    producer.produce(topic, value, partition=0, on_delivery=lambda err, msg: outcome.append((err, msg.offset())))
    producer.flush(60)
    assert outcome, "no delivery report within 60 s"
    return outcome[0][0], outcome[0][1], time.monotonic() - started


def fill(producer: Producer, topic: str, prefix: bytes) -> tuple[list[bytes], KafkaError, float]:
    """Produce numbered records until one is refused: (the acknowledged values in offset order,
    the refusal, how long it took to come)."""
    acked: list[bytes] = []
    for i in range(4 * SMALL_FS_BYTES // VALUE_BYTES):
        value = prefix + b"%06d" % i + bytes(VALUE_BYTES)
        error, offset, seconds = produce_one(producer, topic, value)
        if error is not None:
            return acked, error, seconds
        assert offset == len(acked)
        acked.append(value)
    raise AssertionError(f"{4 * SMALL_FS_BYTES} bytes went into a log dir of {SMALL_FS_BYTES}")


def test_a_full_log_dir_answers_storage_error_serves_reads_and_the_other_dir_goes_on(tmp_path):
    from rafka.cluster import Cluster
    from rafka.common.config import BrokerConfig

    with small_filesystem(tmp_path / "small", SMALL_FS_BYTES) as small:
        big = tmp_path / "big"
        config = BrokerConfig.from_mapping({"log.dirs": f"{small},{big}", "auto.create.topics.enable": "false"})
        cluster = Cluster(tmp_path / "data", brokers=1, first_port=0, namespace="rafka-full-disk", config=config)
        cluster.start()
        try:
            bootstrap = cluster.bootstrap_servers
            admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
            admin.create_topics([NewTopic("full", 1, 1)])["full"].result(60)
            wait_until(lambda: (small / "full-0").is_dir(), message="full-0 on the small dir")
            admin.create_topics([NewTopic("other", 1, 1)])["other"].result(60)   # the dir with fewer partitions
            wait_until(lambda: (big / "other-0").is_dir(), message="other-0 on the normal dir")

            producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, "retries": 0,
                                 "enable.idempotence": False, "request.timeout.ms": REQUEST_TIMEOUT_MS,
                                 "message.timeout.ms": 2 * REQUEST_TIMEOUT_MS, "log_level": 3})
            acked, refused, seconds = fill(producer, "full", b"full-")
            assert refused.code() == KafkaError.KAFKA_STORAGE_ERROR, refused
            assert seconds < REQUEST_TIMEOUT_MS / 1000, f"answered after {seconds:.1f} s"
            assert len(acked) > SMALL_FS_BYTES // VALUE_BYTES // 2
            again, _, seconds = produce_one(producer, "full", b"after the disk filled")
            assert again is not None and again.code() == KafkaError.KAFKA_STORAGE_ERROR and seconds < 5, again

            assert read(bootstrap, "full", 0, len(acked)) == acked     # every acknowledged record
            failed = wait_until(lambda: cluster.broker_status(memory=False)[0].get("offline_log_dirs"),
                                message="the broker lists its failed log dir")
            assert list(failed) == [str(small)] and "ENOSPC" in failed[str(small)], failed

            other = [b"other-%d" % i + bytes(VALUE_BYTES) for i in range(20)]
            for value in other:
                error, _, _ = produce_one(producer, "other", value)
                assert error is None, error
            assert read(bootstrap, "other", 0, len(other)) == other
            admin.create_topics([NewTopic("later", 1, 1)])["later"].result(60)
            wait_until(lambda: (big / "later-0").is_dir(), message="a new topic placed on the dir that works")
            assert not (small / "later-0").exists()
            error, offset, _ = produce_one(producer, "later", b"later")
            assert (error, offset) == (None, 0)
        finally:
            cluster.stop()


def test_a_full_log_dir_moves_the_leadership_of_its_replicas(tmp_path):
    from rafka.cluster import Cluster
    from tools.failover_drill import drill_config

    data = tmp_path / "rf3"
    with small_filesystem(data / "broker-1" / "logs", SMALL_FS_BYTES):
        cluster = Cluster(data, brokers=3, first_port=0, namespace="rafka-full-disk-rf3",
                          config=drill_config(**{"auto.leader.rebalance.enable": "false"}))
        cluster.start()
        try:
            bootstrap = cluster.bootstrap_servers
            admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
            admin.create_topics([NewTopic("spread", 1, replica_assignment=[[1, 0, 2]])])["spread"].result(60)
            wait_until(lambda: (p := partitions(bootstrap, "spread").get(0)) is not None
                       and p["leader_id"] == 1 and sorted(p["isr_nodes"]) == [0, 1, 2], timeout_s=60,
                       message="broker 1 leads with a full ISR")
            producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0,
                                 "enable.idempotence": True, "message.timeout.ms": 120_000, "log_level": 3})
            acked: list[bytes] = []
            moved = None
            for i in range(3 * SMALL_FS_BYTES // VALUE_BYTES):
                value = b"spread-%06d" % i + bytes(VALUE_BYTES)
                error, offset, _ = produce_one(producer, "spread", value)
                assert error is None, error   # retried by the client until the new leader took it
                assert offset == len(acked)
                acked.append(value)
                p = partitions(bootstrap, "spread").get(0)
                if p is not None and p["leader_id"] not in (-1, 1):
                    moved = p
                    break
            assert moved is not None, "broker 1's dir filled but its leadership never moved"
            moved = wait_until(lambda: (p := partitions(bootstrap, "spread").get(0)) is not None
                               and 1 in p["offline_replicas"] and 1 not in p["isr_nodes"] and p, timeout_s=30,
                               message="broker 1's replica offline and out of the ISR")
            assert moved["leader_id"] in (0, 2)
            more = [b"more-%d" % i for i in range(10)]
            for value in more:
                # Not held for broker 1's replica, which fetches no more (replica.lag.time.max.ms)
                error, offset, seconds = produce_one(producer, "spread", value)
                assert error is None and offset == len(acked), error
                assert seconds < PROMPT_S, f"acks=all answered after {seconds:.1f} s"
                acked.append(value)
            assert read(bootstrap, "spread", 0, len(acked)) == acked
        finally:
            cluster.stop()
