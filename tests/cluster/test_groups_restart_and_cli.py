"""Consumer groups across kill -9 (offsets reloaded from `__consumer_offsets`) and the
`rafka groups` command against a running cluster."""
from __future__ import annotations

import json
import os
import signal
import time

from tests.cluster.test_crash_restart import free_port, group_members, kill_9, rafka, up_detached
from tests.waiting import wait_until

TOPIC, GROUP, PARTITIONS = "orders", "orders-app", 3


def consume_and_commit(bootstrap: str, count: int, per_partition: int | None = None) -> dict[int, int]:
    """A group member reads `count` records, committing what it read after each poll; returns
    the next offset per partition it committed. With `per_partition`, it takes at most that many
    records of each partition (the rest of a fetch is left uncommitted), so every partition gets
    a commit: which partitions a plain "first 150 of 300" reaches depends on fetch order."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([TOPIC])
    seen = 0
    positions: dict[int, int] = {}
    taken: dict[int, int] = {}
    deadline = time.monotonic() + 60
    while seen < count and time.monotonic() < deadline:
        msgs = [m for m in consumer.consume(min(100, count - seen), timeout=0.5) if m.error() is None]
        fresh = 0
        for m in msgs:
            if per_partition is not None and taken.get(m.partition(), 0) >= per_partition:
                continue
            taken[m.partition()] = taken.get(m.partition(), 0) + 1
            positions[m.partition()] = m.offset() + 1
            fresh += 1
        if fresh:
            seen += fresh
            consumer.commit(offsets=[TopicPartition(TOPIC, p, o) for p, o in sorted(positions.items())],
                            asynchronous=False)
    consumer.close()
    assert seen == count
    return positions


def groups_cli(bootstrap: str, *args: str):
    return rafka("groups", "--bootstrap-server", bootstrap, *args, timeout=60)


def test_committed_offsets_survive_kill_9_and_the_cli_reads_and_resets_them(tmp_path):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    data_dir, port = str(tmp_path / "rafka"), free_port()
    bootstrap, pid = up_detached(data_dir, port)
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(60)
        producer = Producer({"bootstrap.servers": bootstrap})
        for i in range(300):
            producer.produce(TOPIC, b"order-%d" % i, partition=i % PARTITIONS)
        assert producer.flush(30) == 0
        committed = consume_and_commit(bootstrap, 150, per_partition=150 // PARTITIONS)
        assert committed == {p: 50 for p in range(PARTITIONS)}

        kill_9(pid)
        _, pid = up_detached(data_dir, port)

        described = groups_cli(bootstrap, "--output", "json", "describe", GROUP)
        assert described.returncode == 0, described.stderr
        report = json.loads(described.stdout)
        assert report["state"] == "Empty"
        offsets = {p["partition"]: p["current_offset"] for p in report["partitions"]}
        assert offsets == committed
        assert {p["partition"]: p["lag"] for p in report["partitions"]} == {p: 100 - o for p, o in committed.items()}

        listed = groups_cli(bootstrap, "--output", "json", "list")
        assert listed.returncode == 0 and GROUP in [g["group"] for g in json.loads(listed.stdout)]

        dry = groups_cli(bootstrap, "reset-offsets", GROUP, "--topic", TOPIC, "--to-earliest", "--dry-run")
        assert dry.returncode == 0, dry.stderr
        assert [line.split() for line in dry.stdout.splitlines()[1:]] == [[GROUP, TOPIC, str(p), "0"]
                                                                          for p in range(PARTITIONS)]
        unchanged = json.loads(groups_cli(bootstrap, "--output", "json", "describe", GROUP).stdout)
        assert {p["partition"]: p["current_offset"] for p in unchanged["partitions"]} == committed

        done = groups_cli(bootstrap, "reset-offsets", GROUP, "--topic", f"{TOPIC}:1", "--shift-by", "-10",
                          "--execute")
        assert done.returncode == 0, done.stderr
        moved = json.loads(groups_cli(bootstrap, "--output", "json", "describe", GROUP).stdout)
        assert {p["partition"]: p["current_offset"] for p in moved["partitions"]} == {
            **committed, 1: committed[1] - 10}

        # A restarted member resumes exactly where the offsets say.
        consume_and_commit(bootstrap, 300 - sum(committed.values()) + 10)
        caught_up = json.loads(groups_cli(bootstrap, "--output", "json", "describe", GROUP).stdout)
        assert {(p["partition"], p["current_offset"], p["lag"]) for p in caught_up["partitions"]} == {
            (p, 100, 0) for p in range(PARTITIONS)}

        deleted = groups_cli(bootstrap, "delete", GROUP)
        assert deleted.returncode == 0, deleted.stderr
        gone = groups_cli(bootstrap, "--output", "json", "describe", GROUP)
        assert gone.returncode == 0 and json.loads(gone.stdout)["partitions"] == []
    finally:
        rafka("down", "--data-dir", data_dir)
        if group_members(pid):
            os.killpg(pid, signal.SIGKILL)


def test_reset_is_refused_while_the_group_has_members(rafka_cluster):
    from confluent_kafka import Consumer

    bootstrap = rafka_cluster.bootstrap_servers
    from tests.interop.clients import create_topic
    create_topic(bootstrap, "busy-topic", partitions=2)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "busy-group", "auto.offset.reset": "earliest"})
    consumer.subscribe(["busy-topic"])
    try:
        wait_until(lambda: consumer.poll(0.2) is None and consumer.assignment(), timeout_s=60,
                   message="the member is assigned")
        refused = groups_cli(bootstrap, "reset-offsets", "busy-group", "--topic", "busy-topic", "--to-latest",
                             "--execute")
        assert refused.returncode == 1
        assert "can only be reset if the group 'busy-group' is inactive" in refused.stderr
        assert "Stable" in refused.stderr
    finally:
        consumer.close()
