"""kill -9 of every process of a running rafka, then a restart on the same data dir."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from rafka.common.ports import unused_port
from tests.waiting import wait_until

RAFKA = [sys.executable, "-m", "rafka.cli.main"]


def free_port() -> int:
    """A port for a broker that binds it later (or again, at a restart): below the ephemeral
    range, so no connection on the machine takes it meanwhile (rafka/common/ports.py)."""
    return unused_port()


def rafka(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([*RAFKA, *args], capture_output=True, text=True, timeout=timeout)


def group_members(pgid: int) -> list[int]:
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                members.append(int(entry))
    return members


def up_detached(data_dir: str, port: int, config: str | os.PathLike | None = None) -> tuple[str, int]:
    """`rafka up --detach` on `data_dir` (with a server.properties `config`): (bootstrap servers,
    pid of the server process)."""
    import json

    extra = ("--config", str(config)) if config is not None else ()
    up = rafka("up", "--detach", "--data-dir", data_dir, "--port", str(port), *extra)
    assert up.returncode == 0, up.stderr
    return up.stdout.strip(), json.loads(open(os.path.join(data_dir, "rafka.state.json")).read())["pid"]


def kill_9(pid: int) -> None:
    """SIGKILL every process of a detached rafka (its process group) and wait until gone."""
    assert len(group_members(pid)) > 3  # driver, ZooKeeper and Ray's processes share the group
    os.killpg(pid, signal.SIGKILL)
    wait_until(lambda: not group_members(pid), timeout_s=30, message="every process of the group gone")


def assert_read_back(bootstrap: str, topic: str, partitions: int, acked: dict[tuple[int, int], bytes],
                     group: str) -> None:
    """Every acknowledged record, (partition, offset) -> value, reads back from `topic`."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                         "log_level": 3})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    seen: dict[tuple[int, int], bytes] = {}
    deadline = time.monotonic() + 60
    while len(seen) < len(acked) and time.monotonic() < deadline:
        for m in consumer.consume(1000, timeout=0.5):
            assert m.error() is None, m.error()
            seen[(m.partition(), m.offset())] = m.value()
    consumer.close()
    missing = {k: v for k, v in acked.items() if seen.get(k) != v}
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {list(missing.items())[:3]}"


def test_acknowledged_records_survive_kill_9_and_restart(tmp_path):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    data_dir, port = str(tmp_path / "rafka"), free_port()
    bootstrap, pid = up_detached(data_dir, port)
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("crash", 3, 1)])["crash"].result(60)
        acked: dict[tuple[int, int], bytes] = {}

        def on_delivery(err, msg):
            if err is None:
                acked[(msg.partition(), msg.offset())] = msg.value()

        producer = Producer({"bootstrap.servers": bootstrap, "acks": 1, "enable.idempotence": False,
                             "linger.ms": 2})
        for i in range(6000):
            producer.produce("crash", b"record-%d" % i, partition=i % 3, on_delivery=on_delivery)
        assert producer.flush(60) == 0
        assert len(acked) == 6000

        kill_9(pid)
        _, pid = up_detached(data_dir, port)
        assert_read_back(bootstrap, "crash", 3, acked, "crash-check")
    finally:
        rafka("down", "--data-dir", data_dir)
        if group_members(pid):
            os.killpg(pid, signal.SIGKILL)


def test_idempotent_producer_retries_across_kill_9_with_no_loss_and_no_duplicates(tmp_path):
    """acks=all, five in flight: the broker dies mid-production, comes back on the same data
    dir, and the client's retries finish. Every acknowledged record is there exactly once."""
    import threading

    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    data_dir, port = str(tmp_path / "rafka"), free_port()
    bootstrap, pid = up_detached(data_dir, port)
    total, partitions = 40_000, 3
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("crash-idempotent", partitions, 1)])["crash-idempotent"].result(60)
        acked: dict[bytes, tuple[int, int]] = {}
        failed: list = []

        def on_delivery(err, msg):
            if err is None:
                acked[msg.value()] = (msg.partition(), msg.offset())
            else:
                failed.append(err)

        producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                             "max.in.flight.requests.per.connection": 5, "linger.ms": 2,
                             "batch.num.messages": 200, "message.timeout.ms": 120000})

        killed = threading.Event()

        def produce_all() -> None:
            for i in range(total):
                if i == total // 2:   # the rest only once the broker is killed, so that production
                    give_up = time.monotonic() + 120   # spans it however fast or slow the first acks
                    while not killed.is_set() and time.monotonic() < give_up:   # come (serving the
                        producer.poll(0.05)   # delivery reports meanwhile: they count toward the kill)
                while True:
                    try:
                        producer.produce("crash-idempotent", b"record-%06d" % i, partition=i % partitions,
                                         on_delivery=on_delivery)
                        break
                    except BufferError:
                        producer.poll(0.05)
                producer.poll(0)
                if i % 100 == 0:
                    time.sleep(0.01)  # spread production (4 s at least) over the kill and the restart
            # Delivery reports reach `acked` only through poll(): keep serving them until every
            # record is settled. (The first ack may come late: librdkafka's idempotent producer
            # can wait 0.5 s for its producer id.)
            producer.flush(170)

        thread = threading.Thread(target=produce_all)
        thread.start()
        wait_until(lambda: len(acked) >= 5000, timeout_s=60, message="5,000 records acknowledged")
        kill_9(pid)
        killed.set()
        assert len(acked) < total, "production ended before the kill; nothing was tested"
        _, pid = up_detached(data_dir, port)
        thread.join(180)
        assert producer.flush(120) == 0
        assert not failed, failed[:3]
        assert len(acked) == total

        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "crash-check",
                             "enable.auto.commit": False, "enable.partition.eof": True})
        consumer.assign([TopicPartition("crash-idempotent", p, 0) for p in range(partitions)])
        seen: list[tuple[bytes, int, int]] = []
        at_end: set[int] = set()
        deadline = time.monotonic() + 60
        while (len(seen) < total or len(at_end) < partitions) and time.monotonic() < deadline:
            for m in consumer.consume(2000, timeout=0.5):
                if m.error() is not None:
                    at_end.add(m.partition())
                    continue
                at_end.discard(m.partition())
                seen.append((m.value(), m.partition(), m.offset()))
        consumer.close()
        values = [v for v, _, _ in seen]
        duplicates = len(values) - len(set(values))
        assert duplicates == 0, f"{duplicates} records stored twice"
        where = {v: (p, o) for v, p, o in seen}
        missing = [v for v in acked if v not in where]
        assert not missing, f"{len(missing)} acknowledged records lost, e.g. {missing[:3]}"
        assert all(where[v] == position for v, position in acked.items()), "an acknowledged offset moved"
    finally:
        rafka("down", "--data-dir", data_dir)
        if group_members(pid):
            os.killpg(pid, signal.SIGKILL)
