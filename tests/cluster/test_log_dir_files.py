"""A broker's log dir holds Kafka's files, and a restart reads them back.

After a clean stop: `meta.properties`, `recovery-point-offset-checkpoint` (each partition at
its log end), `log-start-offset-checkpoint`, `cleaner-offset-checkpoint`, and per partition
`partition.metadata` (the topic id clients see) and `leader-epoch-checkpoint`.
"""
from __future__ import annotations

import os
import signal
import uuid
from pathlib import Path

from rafka.net.client import KafkaConnection
from rafka.partition_worker.checkpoints import (
    LeaderEpochCache, read_offset_checkpoint, read_partition_metadata,
)
from rafka.common.types import TopicPartition
from tests.cluster.test_crash_restart import free_port, group_members, rafka, up_detached

METADATA, LIST_OFFSETS = 3, 2


def topic_id_of(bootstrap: str, topic: str) -> uuid.UUID:
    with KafkaConnection.to(bootstrap) as conn:
        meta = conn.request(METADATA, 12, {"topics": [{"topic_id": None, "name": topic}],
                                           "allow_auto_topic_creation": False,
                                           "include_topic_authorized_operations": False})
    return meta["topics"][0]["topic_id"]


def end_offsets(bootstrap: str, topic: str, partitions: int, timestamp: int = -1) -> dict[int, int]:
    """ListOffsets of every partition: latest (-1) or earliest (-2)."""
    with KafkaConnection.to(bootstrap) as conn:
        answer = conn.request(LIST_OFFSETS, 7, {
            "replica_id": -1, "isolation_level": 0,
            "topics": [{"name": topic, "partitions": [{"partition_index": p, "current_leader_epoch": -1,
                                                        "timestamp": timestamp} for p in range(partitions)]}]})
    return {p["partition_index"]: p["offset"] for p in answer["topics"][0]["partitions"]}


def test_clean_stop_leaves_kafkas_files_and_a_restart_reads_them(tmp_path):
    from confluent_kafka import Producer
    from confluent_kafka import TopicPartition as KafkaTopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    data_dir, port = str(tmp_path / "rafka"), free_port()
    bootstrap, pid = up_detached(data_dir, port)
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("files", 2, 1)])["files"].result(60)
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        for i in range(1000):
            producer.produce("files", b"record-%d" % i, partition=i % 2)
        assert producer.flush(60) == 0
        topic_id = topic_id_of(bootstrap, "files")
        deleted = admin.delete_records([KafkaTopicPartition("files", 0, 100)])
        assert list(deleted.values())[0].result(30).low_watermark == 100
        assert rafka("down", "--data-dir", data_dir).returncode == 0

        log_dir = next(Path(data_dir).glob("broker-0/logs"))
        props = (log_dir / "meta.properties").read_text()
        assert "broker.id=0" in props and "cluster.id=" in props
        recovery = read_offset_checkpoint(log_dir / "recovery-point-offset-checkpoint")
        assert recovery[TopicPartition("files", 0)] == 500 and recovery[TopicPartition("files", 1)] == 500
        starts = read_offset_checkpoint(log_dir / "log-start-offset-checkpoint")
        assert starts[TopicPartition("files", 0)] == 100 and starts[TopicPartition("files", 1)] == 0
        assert (log_dir / "cleaner-offset-checkpoint").read_text().startswith("0\n")
        for p in range(2):
            partition_dir = log_dir / f"files-{p}"
            assert read_partition_metadata(partition_dir) == topic_id
            assert [(e.epoch, e.start_offset) for e in LeaderEpochCache(partition_dir).entries] == [(0, 0)]

        bootstrap, pid = up_detached(data_dir, port)
        assert end_offsets(bootstrap, "files", 2) == {0: 500, 1: 500}
        assert end_offsets(bootstrap, "files", 2, timestamp=-2) == {0: 100, 1: 0}  # DeleteRecords survived
        assert topic_id_of(bootstrap, "files") == topic_id
    finally:
        rafka("down", "--data-dir", data_dir)
        if group_members(pid):
            os.killpg(pid, signal.SIGKILL)
