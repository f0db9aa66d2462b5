"""The `rafka` command as a script uses it: --help, exit codes, up/status/down, --config."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from kazoo.client import KazooClient

from rafka.cli.state import pid_alive
from tests.cluster.test_crash_restart import assert_read_back
from rafka.common.ports import unused_port
from tests.waiting import wait_until

RAFKA = [sys.executable, "-m", "rafka.cli.main"]


def rafka(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([*RAFKA, *args], capture_output=True, text=True, timeout=timeout)


def free_port() -> int:
    """A port for a broker that binds it later (or again, at a restart): below the ephemeral
    range, so no connection on the machine takes it meanwhile (rafka/common/ports.py)."""
    return unused_port()


@pytest.mark.parametrize("command", [[], ["up"], ["down"], ["status"], ["broker"], ["broker", "stop"],
                                     ["broker", "start"]], ids=lambda c: " ".join(c) or "rafka")
def test_every_command_has_help_with_an_example(command):
    result = rafka(*command, "--help")
    assert result.returncode == 0
    assert "example" in result.stdout


def test_usage_errors_exit_2_and_nothing_running_exits_1(tmp_path):
    assert rafka().returncode == 2
    assert rafka("up", "--brokers", "0").returncode == 2
    assert rafka("no-such-command").returncode == 2
    status = rafka("status", "--data-dir", str(tmp_path), "--output", "json")
    assert status.returncode == 1 and json.loads(status.stdout)["running"] is False
    assert rafka("down", "--data-dir", str(tmp_path)).returncode == 1


def test_up_with_server_properties_and_an_external_zookeeper(tmp_path, zk_connect):
    port = free_port()
    log_dir = tmp_path / "kafka-logs"
    config = tmp_path / "server.properties"
    config.write_text(f"# a Kafka broker config\nbroker.id=7\nlisteners=PLAINTEXT://127.0.0.1:{port}\n"
                      f"log.dirs={log_dir}\nzookeeper.connect={zk_connect}\nnum.partitions=3\n"
                      "auto.create.topics.enable=true\n")
    data_dir = str(tmp_path / "run")
    up = rafka("up", "--config", str(config), "--detach", "--data-dir", data_dir)
    try:
        assert up.returncode == 0, up.stderr
        assert up.stdout.strip() == f"127.0.0.1:{port}"
        status = rafka("status", "--data-dir", data_dir, "--output", "json")
        report = json.loads(status.stdout)
        assert status.returncode == 0 and report["running"] and report["brokers"]["7"]["reachable"]
        assert report["zookeeper_connect"] == zk_connect  # no private ZooKeeper was started
        assert (log_dir / "meta.properties").read_text().count("broker.id=7") == 1
        zk = KazooClient(hosts=zk_connect)
        zk.start(timeout=10)
        try:
            assert zk.exists("/brokers/ids/7")
        finally:
            zk.stop()
        from kafka import KafkaProducer

        producer = KafkaProducer(bootstrap_servers=f"127.0.0.1:{port}")
        producer.send("cli-auto", b"x").get(timeout=30)
        assert len(list(log_dir.glob("cli-auto-*"))) == 3  # num.partitions from the file
        for partition in range(3):   # new partitions start dormant (no process); a produce wakes each
            producer.send("cli-auto", b"x", partition=partition).get(timeout=30)
        producer.close()
        # The memory of the broker's processes (PSS, from its node's /proc), as the sizing rule of docs/sizing.md uses it.
        broker = json.loads(rafka("status", "--data-dir", data_dir, "--output", "json").stdout)["brokers"]["7"]
        assert broker["live_replicas"] == 3 and broker["dormant_replicas"] == 0
        assert 10 << 20 < broker["replica_pss_bytes"] / 3 < 500 << 20
        assert broker["pss_bytes"] == broker["replica_pss_bytes"] + broker["service_pss_bytes"]
        assert broker["service_pss_bytes"] > 20 << 20   # coordinator and front end
        assert "memory (PSS)" in rafka("status", "--data-dir", data_dir).stdout
    finally:
        down = rafka("down", "--data-dir", data_dir)
    assert down.returncode == 0, down.stderr
    assert rafka("status", "--data-dir", data_dir).returncode == 1


def process_tree(root: int) -> set[int]:
    """`root` and every process descended from it: a detached `rafka up`'s driver, its
    ZooKeeper, and its Ray (whose workers, the brokers' actors, each lead their own process
    group, so a process group does not cover them)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            children.setdefault(ppid, []).append(int(entry))
    tree, todo = set(), [root]
    while todo:
        pid = todo.pop()
        tree.add(pid)
        todo += children.get(pid, [])
    return tree


FAILOVER_PROPERTIES = ("zookeeper.session.timeout.ms=6000\n"
                       # The consumer's group needs a coordinator: one small __consumer_offsets.
                       "offsets.topic.num.partitions=1\noffsets.topic.replication.factor=1\n")


def test_broker_stop_and_start_take_one_broker_down_and_back_from_the_command_line(tmp_path):
    """`rafka broker stop --kill`, then `start`, then a clean `stop` and `start` of another
    broker on a 3-broker cluster with an RF=3 topic: every record produced with acks=all
    before, during and after reads back, each restarted broker rejoins every ISR on its own
    port, and `rafka down` leaves no process of the cluster behind."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    config = tmp_path / "server.properties"
    config.write_text(FAILOVER_PROPERTIES)
    data_dir, topic, partitions = str(tmp_path / "run"), "failover", 2
    # --port 0: ephemeral ports, so `broker start` must reuse the port each broker was given.
    up = rafka("up", "--brokers", "3", "--detach", "--data-dir", data_dir, "--port", "0", "--config", str(config))
    assert up.returncode == 0, up.stderr
    state = json.loads((tmp_path / "run" / "rafka.state.json").read_text())
    bootstrap, pid = up.stdout.strip(), state["pid"]
    assert state["config"] == str(config) and state["broker_count"] == 3 and state["first_port"] == 0
    assert {b: f"127.0.0.1:{port}" for b, port in state["ports"].items()} == state["brokers"]

    def broker(*args: str) -> subprocess.CompletedProcess:
        return rafka("broker", *args, "--data-dir", data_dir, timeout=120)

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    seen_isr: list = []

    def isr_full() -> bool:
        try:
            metadata = admin.list_topics(topic, timeout=5).topics[topic]
        except Exception as e:  # noqa: BLE001 - a broker is going down: ask again
            seen_isr[:] = [repr(e)]
            return False
        seen_isr[:] = [{p: (m.leader, sorted(m.isrs)) for p, m in metadata.partitions.items()}]
        return metadata.error is None and len(metadata.partitions) == partitions and all(
            sorted(p.isrs) == [0, 1, 2] for p in metadata.partitions.values())

    def wait_isr_full(what: str) -> None:
        try:
            wait_until(isr_full, timeout_s=60, interval_s=0.2, message=what)
        except AssertionError as e:
            status = rafka("status", "--data-dir", data_dir, "--output", "json").stdout
            raise AssertionError(f"{e}; last seen (leader, isr) by partition: {seen_isr}; status: {status}") from None

    acked: dict[tuple[int, int], bytes] = {}
    failed: list = []

    def produce(first: int, count: int = 1000) -> None:
        def on_delivery(err, msg):
            if err is not None:
                failed.append(err)
            else:
                acked[(msg.partition(), msg.offset())] = msg.value()

        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                             "enable.idempotence": False, "message.timeout.ms": 60000, "log_level": 3})
        for i in range(first, first + count):
            producer.produce(topic, b"record-%d" % i, partition=i % partitions, on_delivery=on_delivery)
        assert producer.flush(60) == 0
        assert not failed, failed[:3]
        assert len(acked) == first + count

    try:
        admin.create_topics([NewTopic(topic, partitions, 3)])[topic].result(60)
        wait_isr_full("every ISR full after creation")
        produce(0)

        kill = broker("stop", "1", "--kill", "--output", "json")
        assert kill.returncode == 0, kill.stderr
        report = json.loads(kill.stdout)
        assert report["broker_id"] == 1 and report["action"] == "kill" and report["ok"]
        killed = report["pids"]
        assert {"coordinator:1", "frontend:1"} <= set(killed)
        assert sum(1 for name in killed if name.startswith("replica:1:")) == partitions   # every replica it hosts
        assert all(name.startswith(("coordinator:", "frontend:", "replica:1:", "replica-spare:1:")) for name in killed)
        wait_until(lambda: not any(pid_alive(p) for p in killed.values()), timeout_s=5, message="killed pids gone")
        assert broker("stop", "1").returncode == 1           # not running
        produce(1000)                                          # acks=all on 2 of 3 (min.insync.replicas 1)

        start = broker("start", "1", "--output", "json")
        assert start.returncode == 0, start.stderr
        assert json.loads(start.stdout) == {"broker_id": 1, "action": "start", "ok": True,
                                            "address": state["brokers"]["1"]}
        wait_isr_full("broker 1 back in every ISR")
        assert broker("start", "1").returncode == 1          # already running
        assert broker("stop", "7").returncode == 1           # no such broker

        stop = broker("stop", "2")
        assert stop.returncode == 0, stop.stderr
        assert stop.stdout.startswith("Stopped broker 2 (")
        produce(2000)
        start = broker("start", "2")
        assert start.returncode == 0, start.stderr
        assert start.stdout.strip() == f"Started broker 2 at {state['brokers']['2']}."
        wait_isr_full("broker 2 back in every ISR")

        assert_read_back(bootstrap, topic, partitions, acked, "broker-cli-check")

        cluster = process_tree(pid)
        assert len(cluster) > 10   # driver, ZooKeeper, Ray, and 3 brokers' actors (two restarted)
        down = rafka("down", "--data-dir", data_dir)
        assert down.returncode == 0, down.stderr
        wait_until(lambda: not any(pid_alive(p) for p in cluster), timeout_s=30,
                   message="every process of the cluster gone")
    finally:
        if pid_alive(pid):
            rafka("down", "--data-dir", data_dir)
