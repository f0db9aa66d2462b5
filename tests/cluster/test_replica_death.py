"""A replica process that dies (kill -9 of that process alone, as Ray's memory monitor does)
takes only its partition offline, and only until the broker has started it again on its log."""
from __future__ import annotations

import os
import signal
import threading

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from rafka.actors.naming import replica_name
from rafka.common.types import TopicPartition as Partition
from rafka.net.client import KafkaConnection
from tests.waiting import wait_until

METADATA = 3


def partitions(bootstrap: str, topic: str) -> dict[int, dict]:
    with KafkaConnection.to(bootstrap) as conn:
        meta = conn.request(METADATA, 12, {"topics": [{"topic_id": None, "name": topic}],
                                           "allow_auto_topic_creation": False,
                                           "include_topic_authorized_operations": False})["topics"][0]
    return {p["partition_index"]: p for p in meta["partitions"]} if meta["error_code"] == 0 else {}


def replica_pids(cluster) -> dict[str, int]:
    import ray

    from rafka.cluster import find_broker

    return ray.get(find_broker(cluster.namespace, 0).replica_pids.remote(), timeout=30)


def produce(bootstrap: str, topic: str, partition: int, values: list[bytes]) -> list[int]:
    """acks=all; the offsets acknowledged."""
    offsets: list[int] = []
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, "message.timeout.ms": 60000})
    for v in values:
        producer.produce(topic, v, partition=partition,
                         on_delivery=lambda err, msg: err is None and offsets.append(msg.offset()))
    assert producer.flush(90) == 0
    return offsets


def read(bootstrap: str, topic: str, partition: int, count: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "replica-death", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, partition, 0)])
    got: list[bytes] = []
    try:
        wait_until(lambda: got.extend(m.value() for m in consumer.consume(100, timeout=0.5) if m.error() is None)
                   or len(got) >= count, timeout_s=60, message=f"{count} records read back")
    finally:
        consumer.close()
    return got


def test_a_killed_leader_replica_is_offline_then_serves_its_records_again(rafka_cluster):
    bootstrap = rafka_cluster.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("mortal", 2, 1)])["mortal"].result(60)
    before = [b"before-%d" % i for i in range(100)]
    assert produce(bootstrap, "mortal", 0, before) == list(range(100))
    pid = replica_pids(rafka_cluster)[replica_name(0, Partition("mortal", 0))]
    seen_offline = threading.Event()

    def watch() -> None:
        wait_until(lambda: (p := partitions(bootstrap, "mortal").get(0)) and p["leader_id"] == -1
                   and p["offline_replicas"] == [0], timeout_s=30, interval_s=0.01, message="partition 0 offline")
        seen_offline.set()

    watcher = threading.Thread(target=watch)
    watcher.start()
    os.kill(pid, signal.SIGKILL)
    watcher.join()
    assert seen_offline.is_set()
    assert produce(bootstrap, "mortal", 1, [b"other"]) == [0]   # the other partition kept working
    wait_until(lambda: partitions(bootstrap, "mortal")[0]["leader_id"] == 0, timeout_s=60, message="leader back")
    new_pid = replica_pids(rafka_cluster)[replica_name(0, Partition("mortal", 0))]
    assert new_pid != pid
    assert produce(bootstrap, "mortal", 0, [b"after"]) == [100]
    assert read(bootstrap, "mortal", 0, 101) == before + [b"after"]


def test_a_replica_killed_while_its_topic_is_created_does_not_stall_creation(rafka_cluster):
    """A new topic's 30 partitions start dormant; a burst of writes to all of them starts their
    replicas, and one killed in the middle of that burst stalls neither the others nor its own
    partition's records (its broker starts it again)."""
    bootstrap = rafka_cluster.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("storm", 30, 1)], request_timeout=120, operation_timeout=120)["storm"].result(120)
    acked: dict[int, int] = {}
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 0,
                         "message.timeout.ms": 120000})   # (a retry after the kill is not a second record)
    for partition in range(30):
        producer.produce("storm", b"burst", partition=partition,
                         on_delivery=lambda err, msg: err is None and acked.__setitem__(msg.partition(), msg.offset()))
    producer.poll(0)
    victims = wait_until(lambda: [pid for name, pid in replica_pids(rafka_cluster).items() if ":storm-" in name],
                         timeout_s=60, interval_s=0.02, message="a first replica of the new topic")
    os.kill(victims[0], signal.SIGKILL)
    assert producer.flush(150) == 0
    assert acked == {partition: 0 for partition in range(30)}   # every write of the burst, once
    wait_until(lambda: len(p := partitions(bootstrap, "storm")) == 30 and all(x["leader_id"] == 0 for x in p.values()),
               timeout_s=120, message="every partition of the new topic led")
    for partition in range(30):
        assert produce(bootstrap, "storm", partition, [b"x"]) == [1]
