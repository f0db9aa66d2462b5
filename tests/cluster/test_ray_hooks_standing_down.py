"""With another Ray than the one rafka's hooks were written for, a broker starts on Ray's own
behaviour, serves produce and fetch, and its driver logs one warning naming every hook.

The driver runs in a process of its own (a `Cluster` starts a private Ray there), like a user's
program: none of rafka's Ray variables are in its environment (`Cluster.start` sets them; Ray
reads RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER when first imported, so such a program imports Ray
after that, or sets it itself).
The other version is the one the gate reads (`gate.ray_version`), changed in that driver: its
private Ray then starts every process as Ray does (API server, autoscaler monitor, Ray's
`default_worker.py` for the actors, which so never run rafka's lean imports). The actors'
own check (`untraced`) reads the real version in their processes; its standing down is
unit-tested (tests/unit/common/test_ray_hooks_gate.py)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from rafka.actors.ray_env import PRIVATE_RAY_ENVIRONMENT
from rafka.actors.ray_hooks.gate import HOOKS
from rafka.common.ports import unused_port

DRIVER = r"""
import json, logging, sys, time

logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s %(message)s")
from kafka import KafkaConsumer, KafkaProducer
from kafka.structs import TopicPartition

from rafka.actors.ray_hooks import gate
from rafka.cluster import Cluster
from rafka.common.config import BrokerConfig

gate.ray_version = lambda: "2.61.0"   # not the Ray the hooks were written for
data_dir, port, zk_connect = sys.argv[1], int(sys.argv[2]), sys.argv[3]
config = BrokerConfig.from_mapping({"zookeeper.connect": zk_connect, "offsets.topic.num.partitions": "1"})
with Cluster(data_dir, brokers=1, first_port=port, config=config) as cluster:
    import ray

    started = sorted(ray._private.worker._global_node.all_processes)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers)
    for i in range(3):
        producer.send("standing-down", f"record-{i}".encode()).get(timeout=60)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, auto_offset_reset="earliest")
    consumer.assign([TopicPartition("standing-down", 0)])
    values, deadline = [], time.monotonic() + 60
    while len(values) < 3 and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=1000).values():
            values += [r.value.decode() for r in records]
    consumer.close()
print(json.dumps({"values": values, "ray_processes": started}))
"""


@pytest.mark.slow
def test_a_broker_on_another_ray_starts_serves_and_warns_once_naming_every_hook(tmp_path, zk_connect):
    env = {k: v for k, v in os.environ.items() if k not in PRIVATE_RAY_ENVIRONMENT}
    run = subprocess.run([sys.executable, "-c", DRIVER, str(tmp_path / "data"), str(unused_port()), zk_connect],
                         capture_output=True, text=True, timeout=240, env=env)
    assert run.returncode == 0, run.stderr[-4000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["values"] == ["record-0", "record-1", "record-2"]
    assert {"dashboard", "monitor"} <= set(result["ray_processes"]), "Ray's own API server and monitor ran"
    warnings = [line for line in run.stderr.splitlines() if "using Ray's own" in line]
    assert warnings == [f"WARNING rafka.actors.ray_hooks.gate Ray 2.61.0 is not the 2.60 these hooks were written "
                        f"for; using Ray's own: {', '.join(HOOKS)} (rafka runs as before, slower to start actors)"]
