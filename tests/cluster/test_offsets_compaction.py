"""`__consumer_offsets` is compacted like any `cleanup.policy=compact` topic: after many commits
of the same group-topic-partitions the cleaner keeps the latest commit of each, and a
restarted broker loads exactly those."""
from __future__ import annotations

import os
import signal
from pathlib import Path

from rafka.partition_worker.record_batch import decode_records
from rafka.partition_worker.segment import LOG_SUFFIX
from tests.cluster.test_crash_restart import free_port, group_members, rafka, up_detached
from tests.waiting import wait_until

COMMITS, PARTITIONS = 400, 3


def offsets_records(data_dir: str) -> int | None:
    """Records in the `.log` files of `__consumer_offsets-0` (the only offsets partition here);
    None when the cleaner swapped a segment out while they were read."""
    part = next(Path(data_dir).glob("broker-0/logs/__consumer_offsets-0"))
    total = 0
    for path in sorted(part.glob("*" + LOG_SUFFIX)):
        try:
            data, pos = path.read_bytes(), 0
        except FileNotFoundError:  # swapped out since the listing
            return None
        while pos + 61 <= len(data):
            header, records = decode_records(data, pos, verify_crc=False)
            total += len(records)
            pos += header.size
    return total


def test_offsets_topic_keeps_the_latest_commit_per_partition_and_reloads_it(tmp_path):
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    config = tmp_path / "server.properties"
    config.write_text("offsets.topic.num.partitions=1\noffsets.topic.segment.bytes=8192\n"
                      "log.cleaner.backoff.ms=200\ngroup.initial.rebalance.delay.ms=0\n")
    data_dir, port = str(tmp_path / "rafka"), free_port()
    bootstrap, pid = up_detached(data_dir, port, config)
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("compacted-commits", PARTITIONS, 1)])["compacted-commits"].result(60)
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "many-commits", "enable.auto.commit": False})
        for i in range(1, COMMITS + 1):
            consumer.commit(offsets=[TopicPartition("compacted-commits", p, i * 10 + p) for p in range(PARTITIONS)],
                            asynchronous=False)
        consumer.close()
        written = COMMITS * PARTITIONS  # one record per committed partition
        # The cleaner runs on its own (even while the commits go on); the active segment is
        # never cleaned, so a few more than the latest three stay.
        wait_until(lambda: (n := offsets_records(data_dir)) is not None and n < written // 4, timeout_s=60,
                   message="__consumer_offsets compacted")

        assert rafka("down", "--data-dir", data_dir).returncode == 0
        bootstrap, pid = up_detached(data_dir, port, config)
        probe = Consumer({"bootstrap.servers": bootstrap, "group.id": "many-commits"})
        committed = probe.committed([TopicPartition("compacted-commits", p) for p in range(PARTITIONS)], timeout=60)
        probe.close()
        assert {tp.partition: tp.offset for tp in committed} == {p: COMMITS * 10 + p for p in range(PARTITIONS)}
    finally:
        rafka("down", "--data-dir", data_dir)
        if group_members(pid):
            os.killpg(pid, signal.SIGKILL)
