"""Partitions added by CreatePartitions live in the topic's znode: after a clean stop and a
restart of the broker they are still there, led, and still hold what was written to them."""
from __future__ import annotations

from tests.waiting import wait_until


def test_added_partitions_survive_a_broker_restart(rafka_cluster, tmp_path):
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

    from rafka.cluster import Cluster

    cluster = Cluster(tmp_path / "cparts", brokers=1, first_port=0, namespace="rafka-cparts")
    cluster.start()
    try:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "log_level": 3})
        admin.create_topics([NewTopic("grown", 1)])["grown"].result(60)
        admin.create_partitions([NewPartitions("grown", 2)], operation_timeout=60)["grown"].result(90)
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "log_level": 3})
        producer.produce("grown", b"in-partition-1", partition=1)
        assert producer.flush(60) == 0

        cluster.stop_broker(0)
        cluster.restart_broker(0)

        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "log_level": 3})

        def led() -> bool:
            topic = admin.list_topics("grown", timeout=10).topics["grown"]
            return sorted(topic.partitions) == [0, 1] and all(p.leader >= 0 for p in topic.partitions.values())

        wait_until(led, timeout_s=60, message="both partitions led after the restart")
        consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "grown-reader",
                             "enable.auto.commit": False, "log_level": 3})
        consumer.assign([TopicPartition("grown", 1, 0)])
        seen = []
        wait_until(lambda: seen.extend(m.value() for m in consumer.consume(10, timeout=0.5) if m.error() is None)
                   or seen, timeout_s=60, message="the record written to partition 1 read back")
        consumer.close()
        assert seen == [b"in-partition-1"]
    finally:
        cluster.stop()
