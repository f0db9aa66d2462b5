"""`rafka broker` pure parts: the cluster rebuilt from `rafka up`'s state file, and refusals."""
from __future__ import annotations

import json
import os

import pytest

from rafka.cli.broker import BrokerCommandError, cluster_from_state, running_state
from rafka.cli.main import main
from rafka.cli.state import write_state
from rafka.cluster import Cluster
from rafka.common.config import BrokerConfig

ZK = "127.0.0.1:2181/rafka"


def up_state(config: str | None, ports: dict[int, int], **extra) -> dict:
    """What `rafka up` writes (a live pid: this process)."""
    return {"pid": os.getpid(), "bootstrap_servers": ",".join(f"127.0.0.1:{p}" for p in ports.values()),
            "brokers": {str(b): f"127.0.0.1:{p}" for b, p in ports.items()}, "zookeeper_connect": ZK,
            "cluster_id": "c", "ray_address": "127.0.0.1:6379", "namespace": "rafka-x", "ray_auth_mode": None,
            "config": config, "broker_count": len(ports), "first_port": 0,
            "ports": {str(b): p for b, p in ports.items()}, **extra}


def test_rebuilt_cluster_restarts_each_broker_with_the_config_and_port_up_gave_it(tmp_path):
    properties = tmp_path / "server.properties"
    properties.write_text("broker.id=5\nmin.insync.replicas=2\nzookeeper.session.timeout.ms=6000\n")
    ports = {5: 40001, 6: 40002, 7: 40003}
    base = BrokerConfig.from_properties(properties).replace(zookeeper_connect=ZK)
    original = Cluster(tmp_path / "run", brokers=3, first_port=0, config=base, namespace="rafka-x")
    original.ports.update(ports)

    rebuilt = cluster_from_state(up_state(str(properties), ports), tmp_path / "run")

    assert rebuilt.namespace == "rafka-x" and rebuilt.detached and rebuilt.data_dir == original.data_dir
    for broker_id, port in ports.items():
        config = rebuilt.restart_config(broker_id)
        assert config == original.restart_config(broker_id)
        assert config.listeners == (f"PLAINTEXT://127.0.0.1:{port}",)   # the ephemeral port it had
        assert config.log_dirs == (str(tmp_path / "run" / f"broker-{broker_id}" / "logs"),)
        assert config.zookeeper_connect == ZK and config.min_insync_replicas == 2
        assert config.zookeeper_session_timeout_ms == 6000


def test_rebuilt_cluster_without_a_config_file_uses_the_defaults(tmp_path):
    rebuilt = cluster_from_state(up_state(None, {0: 9092, 1: 9093}), tmp_path)
    assert rebuilt.restart_config(1).listeners == ("PLAINTEXT://127.0.0.1:9093",)
    assert rebuilt.restart_config(1).broker_id == 1


def test_brokers_of_generated_ids_are_found_by_their_log_dirs_meta_properties(tmp_path):
    """broker.id=-1: each broker's log dir is named by its place, and `rafka broker start 1002`
    finds the place whose meta.properties holds 1002; the config keeps -1 (the broker takes
    its id from there again)."""
    from rafka.partition_worker.log_dirs import check_meta_properties

    properties = tmp_path / "server.properties"
    properties.write_text("broker.id=-1\n")
    ports = {1001: 40001, 1002: 40002}
    run = tmp_path / "run"
    for index, broker_id in enumerate(ports):
        check_meta_properties(run / f"slot-{index}" / "logs", broker_id, "c")
    rebuilt = cluster_from_state(up_state(str(properties), ports), run)
    config = rebuilt.restart_config(1002)
    assert config.broker_id == -1 and config.log_dirs == (str(run / "slot-1" / "logs"),)
    assert config.listeners == ("PLAINTEXT://127.0.0.1:40002",)
    assert [rebuilt.broker_config(i).broker_id for i in range(2)] == [-1, -1]
    with pytest.raises(LookupError, match="broker 7"):
        rebuilt.restart_config(7)


def test_a_config_file_gone_since_up_is_a_refusal(tmp_path):
    with pytest.raises(BrokerCommandError, match="cannot read the cluster's config"):
        cluster_from_state(up_state(str(tmp_path / "gone.properties"), {0: 9092}), tmp_path)


def test_refusals_name_what_is_wrong(tmp_path):
    with pytest.raises(BrokerCommandError, match="nothing is running"):
        running_state(tmp_path, 0)
    write_state(tmp_path, {**up_state(None, {0: 9092}), "pid": 2 ** 22 + 1})   # no such process
    with pytest.raises(BrokerCommandError, match="nothing is running"):
        running_state(tmp_path, 0)
    old = up_state(None, {0: 9092})
    for key in ("config", "broker_count", "first_port", "ports"):
        del old[key]
    write_state(tmp_path, old)
    with pytest.raises(BrokerCommandError, match="older `rafka up`"):
        running_state(tmp_path, 0)
    write_state(tmp_path, up_state(None, {0: 9092, 1: 9093, 2: 9094}))
    with pytest.raises(BrokerCommandError, match=r"no broker 3 in this cluster \(brokers: 0, 1, 2\)"):
        running_state(tmp_path, 3)
    assert running_state(tmp_path, 2)["ports"]["2"] == 9094


@pytest.mark.parametrize("argv", [["broker"], ["broker", "stop"], ["broker", "start", "one"],
                                  ["broker", "restart", "1"], ["broker", "start", "1", "--kill"]],
                         ids=lambda argv: " ".join(argv))
def test_bad_usage_exits_2(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2


def test_nothing_running_exits_1_with_one_json_object(tmp_path, capsys):
    assert main(["broker", "stop", "1", "--kill", "--data-dir", str(tmp_path), "--output", "json"]) == 1
    out, err = capsys.readouterr()
    assert json.loads(out) == {"broker_id": 1, "action": "kill", "ok": False,
                               "error": f"nothing is running from {tmp_path}"}
    assert "nothing is running" in err


def test_status_text_names_each_brokers_rack(capsys):
    from rafka.cli.status import _print_text

    _print_text({"pid": 1, "cluster_id": "c", "bootstrap_servers": "b", "zookeeper_connect": "z", "brokers": {
        "1001": {"address": "127.0.0.1:1", "reachable": True, "rack": "a", "controller": True},
        "1002": {"address": "127.0.0.1:2", "reachable": True, "rack": None}}})
    lines = capsys.readouterr().out.splitlines()
    assert "  broker 1001 (controller) (rack a): 127.0.0.1:1 serving" in lines
    assert "  broker 1002: 127.0.0.1:2 serving" in lines
