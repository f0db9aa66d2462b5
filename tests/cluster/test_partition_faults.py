"""One partition that cannot open never takes the broker with it.

A restart finds a partition directory whose `partition.metadata` names another topic id
(Kafka's InconsistentTopicIdException): the broker serves every other partition, reports
the bad one (its log, `rafka status`, and Metadata's offline replicas), and keeps retrying
it, so once the directory is repaired the partition serves its records again.
"""
from __future__ import annotations

import json
import uuid
from pathlib import Path

from rafka.net.client import KafkaConnection
from rafka.partition_worker.checkpoints import write_partition_metadata
from tests.cluster.test_crash_restart import free_port, rafka, up_detached
from tests.waiting import wait_until

METADATA = 3
RECORDS = 50


def offline_replicas(bootstrap: str, topic: str) -> dict[int, list[int]]:
    with KafkaConnection.to(bootstrap) as conn:
        meta = conn.request(METADATA, 12, {"topics": [{"topic_id": None, "name": topic}],
                                           "allow_auto_topic_creation": False,
                                           "include_topic_authorized_operations": False})
    return {p["partition_index"]: p["offline_replicas"] for p in meta["topics"][0]["partitions"]}


def status(data_dir: str) -> dict:
    out = rafka("status", "--data-dir", data_dir, "--output", "json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def consume(bootstrap: str, topic: str, partition: int, count: int) -> list[bytes]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex}",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, partition, 0)])
    values: list[bytes] = []
    try:
        def read_all() -> bool:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                values.append(msg.value())
            return len(values) >= count
        wait_until(read_all, timeout_s=60, interval_s=0, message=f"{count} records of {topic}-{partition}")
    finally:
        consumer.close()
    return values


def produce(bootstrap: str, topic: str, partition: int, prefix: str) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "message.timeout.ms": 30000})
    failures = []
    for i in range(RECORDS):
        producer.produce(topic, f"{prefix}-{i}".encode(), partition=partition,
                         on_delivery=lambda err, _msg: err and failures.append(err))
    assert producer.flush(60) == 0 and not failures, failures


def test_a_partition_that_cannot_open_is_reported_and_retried_while_the_rest_serve(tmp_path):
    from confluent_kafka.admin import AdminClient, NewTopic

    data_dir, port = str(tmp_path / "rafka"), free_port()
    bootstrap, _ = up_detached(data_dir, port)
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for f in admin.create_topics([NewTopic("healthy", 1, 1), NewTopic("broken", 2, 1)]).values():
            f.result(60)
        for topic, partition in (("healthy", 0), ("broken", 0), ("broken", 1)):
            produce(bootstrap, topic, partition, f"before-{topic}-{partition}")
        assert rafka("down", "--data-dir", data_dir).returncode == 0

        [bad_dir] = Path(data_dir).glob("**/broken-0")
        original = (bad_dir / "partition.metadata").read_bytes()
        write_partition_metadata(bad_dir, uuid.uuid4())

        bootstrap, _ = up_detached(data_dir, port)
        # The rest of the broker serves: old records read back, new ones acknowledged.
        for topic, partition in (("healthy", 0), ("broken", 1)):
            assert consume(bootstrap, topic, partition, RECORDS)[0] == f"before-{topic}-{partition}-0".encode()
            produce(bootstrap, topic, partition, f"after-{topic}-{partition}")
        # The bad one is reported: offline in Metadata, in `rafka status`, in the broker's log.
        assert offline_replicas(bootstrap, "broken") == {0: [0], 1: []}
        report = wait_until(lambda: (s := status(data_dir))["brokers"]["0"].get("offline_replicas")
                            and s["brokers"]["0"]["offline_replicas"][0]["failures"] >= 2 and s,
                            timeout_s=60, interval_s=0.5, message="a retried offline replica in rafka status")
        [offline] = report["brokers"]["0"]["offline_replicas"]
        assert offline["partition"] == "broken-0" and "topic id" in offline["error"]
        assert "healthy-0" in report["brokers"]["0"]["replicas"]
        # (Ray's log monitor forwards the actors' lines to `rafka.out` within about a second.)
        wait_until(lambda: "replica broken-0 is offline" in (Path(data_dir) / "rafka.out").read_text(errors="replace"),
                   timeout_s=15, interval_s=0.2, message="the offline replica in the broker's log (rafka.out)")

        # Repaired, the partition comes back on the next retry with its records.
        (bad_dir / "partition.metadata").write_bytes(original)
        # (Watched through Metadata, a request; each `rafka status` is a process that joins Ray.)
        wait_until(lambda: offline_replicas(bootstrap, "broken") == {0: [], 1: []}, timeout_s=90, interval_s=0.5,
                   message="broken-0 back online: Metadata without offline replicas")
        assert not status(data_dir)["brokers"]["0"]["offline_replicas"]
        assert consume(bootstrap, "broken", 0, RECORDS)[-1] == f"before-broken-0-{RECORDS - 1}".encode()
        produce(bootstrap, "broken", 0, "after-broken-0")
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for f in admin.delete_topics(["healthy", "broken"]).values():
            f.result(60)
    finally:
        rafka("down", "--data-dir", data_dir)
