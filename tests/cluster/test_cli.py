"""The `rafka` command as a script uses it: --help, exit codes, up/status/down, --config."""
from __future__ import annotations

import json
import socket
import subprocess
import sys

import pytest
from kazoo.client import KazooClient

RAFKA = [sys.executable, "-m", "rafka.cli.main"]


def rafka(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([*RAFKA, *args], capture_output=True, text=True, timeout=timeout)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("command", [[], ["up"], ["down"], ["status"]], ids=lambda c: " ".join(c) or "rafka")
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
        producer.close()
        assert len(list(log_dir.glob("cli-auto-*"))) == 3  # num.partitions from the file
    finally:
        down = rafka("down", "--data-dir", data_dir)
    assert down.returncode == 0, down.stderr
    assert rafka("status", "--data-dir", data_dir).returncode == 1
