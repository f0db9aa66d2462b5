"""Dormant replicas (`replica.dormant.after.ms`): a replica without writes for that long closes
and its process exits; its partition stays online, read from its files, and the next write
wakes it. New partitions start dormant. Checked with a real client on real brokers: every
acknowledged record comes back, in order, once, through dormancy, wakes, restarts and kill -9."""
from __future__ import annotations

import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

from tests.waiting import wait_until

DORMANT_AFTER_MS = 1500
SESSION_TIMEOUT_MS = 30000   # a killed broker's session outlives its restart by far


def config(**extra: str):
    from rafka.common.config import BrokerConfig

    # A retry horizon within the dormancy delay: replicas rest DORMANT_AFTER_MS after their last
    # write, as before (the default horizon, 30.1 s, is tested in test_rest_never_races_a_producer.py).
    return BrokerConfig.from_mapping({"replica.dormant.after.ms": str(DORMANT_AFTER_MS),
                                      "replica.dormant.retry.horizon.ms": str(DORMANT_AFTER_MS), **extra})


def produce(bootstrap: str, topic: str, partition: int, values: list[bytes], producer: Producer | None = None,
            **settings: object) -> list[int]:
    """acks=all; the offsets acknowledged, in order."""
    offsets: list[int] = []
    own = producer is None
    if own:
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0,
                             "message.timeout.ms": 60000, **settings})
    for v in values:
        producer.produce(topic, v, partition=partition,
                         on_delivery=lambda err, msg: offsets.append(msg.offset() if err is None else -1))
    assert producer.flush(90) == 0
    return offsets


def read_all(bootstrap: str, topic: str, partition: int, count: int, start: int = 0) -> list[bytes]:
    """`count` records from `start`, by a fresh consumer (no group)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "dormant-reader", "enable.auto.commit": False,
                         "fetch.wait.max.ms": 100})
    consumer.assign([TopicPartition(topic, partition, start)])
    got: list[bytes] = []
    try:
        wait_until(lambda: got.extend(m.value() for m in consumer.consume(100, timeout=0.5) if m.error() is None)
                   or len(got) >= count, timeout_s=60, message=f"{count} records of {topic}-{partition} read")
        assert not [m for m in consumer.consume(10, timeout=0.5) if m.error() is None], "more records than written"
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
    finally:
        consumer.close()
    assert high == start + count
    return got


def watermarks(bootstrap: str, topic: str) -> tuple[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "dormant-watermarks"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    finally:
        consumer.close()


def live(cluster, broker_id: int, topic: str) -> set[str]:
    return {r for r in cluster.broker_status(memory=False)[broker_id]["replicas"] if r.startswith(topic + "-")}


def dormant_count(cluster, broker_id: int) -> int:
    return cluster.broker_status(memory=False)[broker_id]["dormant_replicas"]


def test_a_partition_sleeps_wakes_and_keeps_every_record_through_restarts(rafka_cluster, tmp_path):
    from rafka.cluster import Cluster

    cluster = Cluster(tmp_path / "dormant", brokers=1, first_port=0, config=config(**{
        "log.retention.check.interval.ms": "1000", "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS)}),
        namespace="rafka-dormant")
    cluster.start()
    try:
        bootstrap = cluster.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("sleepy", 2, 1)])["sleepy"].result(60)
        assert live(cluster, 0, "sleepy") == set()              # new partitions start without a process
        assert dormant_count(cluster, 0) >= 2

        values = [b"v-%d" % i for i in range(100)]
        assert produce(bootstrap, "sleepy", 0, values) == list(range(100))   # a produce wakes it
        assert "sleepy-0" in live(cluster, 0, "sleepy")         # (sleepy-1, never written, wakes with it)
        assert read_all(bootstrap, "sleepy", 0, 100) == values
        wait_until(lambda: live(cluster, 0, "sleepy") == set(), timeout_s=30, message="sleepy-0 dormant again")
        assert read_all(bootstrap, "sleepy", 0, 100) == values   # from the files, no process
        assert read_all(bootstrap, "sleepy", 0, 40, start=60) == values[60:]
        assert live(cluster, 0, "sleepy") == set()               # reads do not wake it

        # A consumer waiting at the end of a dormant partition gets the record that wakes it.
        waiting = Consumer({"bootstrap.servers": bootstrap, "group.id": "dormant-tail", "enable.auto.commit": False})
        waiting.assign([TopicPartition("sleepy", 0, 100)])
        assert not [m for m in waiting.consume(10, timeout=1.0) if m.error() is None]   # fetching, nothing there
        got: list[bytes] = []
        tail = threading.Thread(target=lambda: wait_until(
            lambda: got.extend(m.value() for m in waiting.consume(10, timeout=0.5) if m.error() is None) or got,
            timeout_s=60, message="the waiting consumer got the new record"))
        tail.start()
        assert produce(bootstrap, "sleepy", 0, [b"wake"]) == [100]
        tail.join()
        waiting.close()
        assert got == [b"wake"]

        # An idempotent producer's sequence goes on across a dormancy.
        idempotent = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 0})
        assert produce(bootstrap, "sleepy", 1, [b"a", b"b"], producer=idempotent) == [0, 1]
        wait_until(lambda: live(cluster, 0, "sleepy") == set(), timeout_s=30, message="both partitions dormant")
        assert produce(bootstrap, "sleepy", 1, [b"c", b"d"], producer=idempotent) == [2, 3]
        assert read_all(bootstrap, "sleepy", 1, 4) == [b"a", b"b", b"c", b"d"]
        wait_until(lambda: live(cluster, 0, "sleepy") == set(), timeout_s=30, message="both dormant again")

        # Retention of a dormant partition: a shorter retention.bytes wakes it to delete segments.
        admin.create_topics([NewTopic("trimmed", 1, 1, config={"segment.bytes": "1024"})])["trimmed"].result(60)
        assert produce(bootstrap, "trimmed", 0, [b"t" * 100] * 50, **{"batch.num.messages": 1}) == list(range(50))
        wait_until(lambda: live(cluster, 0, "trimmed") == set(), timeout_s=30, message="trimmed-0 dormant")
        assert watermarks(bootstrap, "trimmed") == (0, 50)
        resource = ConfigResource(ConfigResource.Type.TOPIC, "trimmed",
                                  incremental_configs=[ConfigEntry("retention.bytes", "1024",
                                                                   incremental_operation=AlterConfigOpType.SET)])
        admin.incremental_alter_configs([resource])[resource].result(30)
        wait_until(lambda: watermarks(bootstrap, "trimmed")[0] > 0, timeout_s=60,
                   message="old segments of the dormant trimmed-0 deleted")
        assert watermarks(bootstrap, "trimmed")[1] == 50

        # A clean restart and a kill -9 while dormant: partitions come back dormant, records intact.
        cluster.stop_broker(0)
        cluster.restart_broker(0)
        assert live(cluster, 0, "sleepy") == set()
        assert read_all(bootstrap, "sleepy", 0, 101) == values + [b"wake"]
        cluster.kill_broker(0)
        started = time.monotonic()
        cluster.restart_broker(0)
        # The killed process's registration went at once (it had held the log dirs' locks),
        # not when its ZooKeeper session expired.
        assert time.monotonic() - started < SESSION_TIMEOUT_MS / 1000 * 2 / 3
        assert live(cluster, 0, "sleepy") == set()
        assert read_all(bootstrap, "sleepy", 1, 4) == [b"a", b"b", b"c", b"d"]
        assert produce(bootstrap, "sleepy", 1, [b"e"]) == [4]
    finally:
        cluster.stop()


def partition_state(bootstrap: str, topic: str) -> tuple[int, list[int]]:
    """(leader, sorted ISR) of partition 0 as Metadata shows it."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    p = admin.list_topics(topic, timeout=10).topics[topic].partitions[0]
    return p.leader, sorted(p.isrs)


def no_live_replica(cluster, topic: str, brokers) -> bool:
    return all(not live(cluster, b, topic) for b in brokers)


def test_a_replicated_partition_sleeps_on_every_broker_and_loses_nothing(rafka_cluster, tmp_path):
    """RF=3, acks=all: dormant on all three brokers, woken by a produce with the ISR unchanged, an
    idempotent producer's sequence going on, and a kill -9 of the leader's broker while dormant."""
    from rafka.cluster import Cluster

    replicated = config(**{"default.replication.factor": "3", "min.insync.replicas": "2",
                           "offsets.topic.replication.factor": "3", "offsets.topic.num.partitions": "1"})
    cluster = Cluster(tmp_path / "dormant3", brokers=3, first_port=0, config=replicated, namespace="rafka-dormant3")
    cluster.start()
    try:
        bootstrap = cluster.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("calm", 1, 3)])["calm"].result(60)
        idempotent = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 0,
                               "message.timeout.ms": 60000})
        first = [b"first-%d" % i for i in range(50)]
        assert produce(bootstrap, "calm", 0, first, producer=idempotent) == list(range(50))
        wait_until(lambda: partition_state(bootstrap, "calm")[1] == [0, 1, 2], timeout_s=60, message="ISR full")
        wait_until(lambda: no_live_replica(cluster, "calm", (0, 1, 2)), timeout_s=60,
                   message="calm-0 dormant on every broker")
        before = partition_state(bootstrap, "calm")

        second = [b"second-%d" % i for i in range(50)]
        assert produce(bootstrap, "calm", 0, second, producer=idempotent) == list(range(50, 100))
        assert partition_state(bootstrap, "calm") == before          # waking is not an ISR change
        assert read_all(bootstrap, "calm", 0, 100) == first + second   # in order, once each

        wait_until(lambda: no_live_replica(cluster, "calm", (0, 1, 2)), timeout_s=60, message="dormant again")
        leader = before[0]
        cluster.kill_broker(leader)
        wait_until(lambda: partition_state(bootstrap, "calm")[0] not in (-1, leader), timeout_s=60,
                   message="leadership moved off the killed broker")
        assert read_all(bootstrap, "calm", 0, 100) == first + second
        third = [b"third-%d" % i for i in range(10)]
        assert produce(bootstrap, "calm", 0, third, producer=idempotent) == list(range(100, 110))
        cluster.restart_broker(leader)
        wait_until(lambda: partition_state(bootstrap, "calm")[1] == [0, 1, 2], timeout_s=90,
                   message="the restarted broker back in the ISR")
        assert read_all(bootstrap, "calm", 0, 110) == first + second + third
    finally:
        cluster.stop()
