"""kill -9 of every process of a running rafka, then a restart on the same data dir."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

from tests.waiting import wait_until

RAFKA = [sys.executable, "-m", "rafka.cli.main"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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


def test_acknowledged_records_survive_kill_9_and_restart(tmp_path):
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    data_dir, port = str(tmp_path / "rafka"), free_port()
    up = rafka("up", "--detach", "--data-dir", data_dir, "--port", str(port))
    assert up.returncode == 0, up.stderr
    bootstrap = up.stdout.strip()
    import json
    pid = json.loads(open(os.path.join(data_dir, "rafka.state.json")).read())["pid"]
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

        members = group_members(pid)
        assert len(members) > 3, members  # driver, ZooKeeper and Ray's processes share the group
        os.killpg(pid, signal.SIGKILL)
        wait_until(lambda: not group_members(pid), timeout_s=30, message="every process of the group gone")

        again = rafka("up", "--detach", "--data-dir", data_dir, "--port", str(port))
        assert again.returncode == 0, again.stderr
        pid = json.loads(open(os.path.join(data_dir, "rafka.state.json")).read())["pid"]
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "crash-check",
                             "enable.auto.commit": False})
        consumer.assign([TopicPartition("crash", p, 0) for p in range(3)])
        seen: dict[tuple[int, int], bytes] = {}
        deadline = time.monotonic() + 60
        while len(seen) < len(acked) and time.monotonic() < deadline:
            for m in consumer.consume(1000, timeout=0.5):
                assert m.error() is None, m.error()
                seen[(m.partition(), m.offset())] = m.value()
        consumer.close()
        missing = {k: v for k, v in acked.items() if seen.get(k) != v}
        assert not missing, f"{len(missing)} acknowledged records lost, e.g. {list(missing.items())[:3]}"
    finally:
        rafka("down", "--data-dir", data_dir)
        if group_members(pid):
            os.killpg(pid, signal.SIGKILL)
