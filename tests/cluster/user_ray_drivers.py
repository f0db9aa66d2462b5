"""The two Ray drivers of `test_facade_in_user_ray`, each run as its own process against a user's Ray.

    python -m tests.cluster.user_ray_drivers start <ray address>
    python -m tests.cluster.user_ray_drivers connect <ray address>

`start` is a user's program: it joins the Ray, makes an actor of its own (detached, namespace
`user`), starts a detached 3-broker rafka cluster, creates a topic and exits, leaving the cluster
running. `connect` is another program: it finds the cluster, produces and consumes with
kafka-python, shuts the cluster down, and checks that the user's actor and resources are as they
were. Each prints one JSON line of what it saw; the test checks processes from outside.
"""
from __future__ import annotations

import json
import os
import sys
import time

import ray

TOPIC = "orders"
RECORDS = 200
RAFKA_ACTOR_CLASSES = ("BrokerCoordinator", "Frontend", "PartitionReplica", "ClusterRegistry")


@ray.remote(num_cpus=0)
class Keeper:
    """The user's own actor: it must outlive rafka's cluster, untouched."""

    def __init__(self) -> None:
        self.calls = 0

    def call(self) -> int:
        self.calls += 1
        return self.calls


@ray.remote(num_cpus=0)
def worker_environment() -> dict[str, str]:
    """A fresh task's view of the Ray variables rafka sets for a Ray of its own."""
    from rafka.actors.ray_env import PRIVATE_RAY_ENVIRONMENT

    return {name: os.environ[name] for name in PRIVATE_RAY_ENVIRONMENT if name in os.environ}


def rafka_actor_names() -> list[str]:
    return sorted(a["name"] for a in ray.util.list_named_actors(all_namespaces=True) if a["namespace"] == "rafka")


def start(address: str) -> dict:
    ray.init(address=address, logging_level="WARNING", log_to_driver=False)
    environment = dict(os.environ)
    keeper = Keeper.options(name="keeper", namespace="user", lifetime="detached").remote()
    ray.get(keeper.call.remote())
    resources = ray.cluster_resources()
    worker_env = ray.get(worker_environment.remote())
    namespace = ray.get_runtime_context().namespace

    import rafka
    from rafka.cluster import find_broker

    cluster = rafka.Cluster.start(brokers=3, detached=True, config={"offsets.topic.num.partitions": 1,
                                                                     "group.initial.rebalance.delay.ms": 0})
    cluster.admin.create_topic(TOPIC, partitions=2, replication_factor=3, config={"min.insync.replicas": 2})
    node = ray.get_runtime_context().get_node_id()
    processes = {b: ray.get(find_broker("rafka", b).processes.remote()) for b in cluster.brokers}
    registry = ray.get_actor("cluster", namespace="rafka")
    seen = {"start_time_s": cluster.start_time_s, "bootstrap_servers": cluster.bootstrap_servers,
            "brokers": sorted(cluster.brokers), "actor_names": rafka_actor_names(),
            "brokers_on_this_node": all(p["node_id"] == node for p in processes.values()),
            "broker_pids": sorted({pid for p in processes.values() for pid in p["pids"].values()}),
            "zookeeper_pid": ray.get(registry.zookeeper_pid.remote()),
            "partitions": [len(t.partitions) for t in cluster.admin.describe_topics([TOPIC])],
            "environment_unchanged": dict(os.environ) == environment,
            "namespace_unchanged": ray.get_runtime_context().namespace == namespace,
            "resources_unchanged": ray.cluster_resources() == resources,
            "worker_environment_before": worker_env, "resources": resources}
    return seen


def connect(address: str) -> dict:
    ray.init(address=address, logging_level="WARNING", log_to_driver=False)
    environment = dict(os.environ)
    import rafka
    from kafka import KafkaConsumer, KafkaProducer

    cluster = rafka.Cluster.connect()
    bootstrap = cluster.bootstrap_servers
    # Patient: the partitions' replicas start on the first produce, in a user's Ray on a busy machine.
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", request_timeout_ms=120000,
                             delivery_timeout_ms=300000)
    sent = [producer.send(TOPIC, key=b"k%d" % i, value=b"v%d" % i) for i in range(RECORDS)]
    producer.flush(timeout=300)
    acked = sum(1 for f in sent if f.get(timeout=60) is not None)
    producer.close()
    consumer = KafkaConsumer(TOPIC, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             group_id="facade-test", consumer_timeout_ms=30000)
    received = set()
    deadline = time.monotonic() + 120
    for message in consumer:
        received.add((message.key, message.value))
        if len(received) == RECORDS or time.monotonic() > deadline:
            break
    consumer.commit()
    consumer.close()
    groups = [g.group for g in cluster.admin.list_groups()]
    offsets = sum(cluster.admin.list_group_offsets("facade-test").values())

    cluster.shutdown()
    deadline = time.monotonic() + 60
    while rafka_actor_names() and time.monotonic() < deadline:
        time.sleep(0.2)
    keeper = ray.get_actor("keeper", namespace="user")
    seen = {"bootstrap_servers": bootstrap, "acked": acked,
            "received_exact": received == {(b"k%d" % i, b"v%d" % i) for i in range(RECORDS)},
            "groups": groups, "committed_total": offsets,
            "actor_names_after": rafka_actor_names(), "keeper_calls": ray.get(keeper.call.remote()),
            "worker_environment_after": ray.get(worker_environment.remote()),
            "resources": ray.cluster_resources(), "environment_unchanged": dict(os.environ) == environment}
    try:
        rafka.Cluster.connect()
        seen["connect_after_shutdown"] = "found a cluster"
    except LookupError as e:
        seen["connect_after_shutdown"] = type(e).__name__
    ray.kill(keeper)
    return seen


if __name__ == "__main__":
    action, address = sys.argv[1], sys.argv[2]
    print(json.dumps({"start": start, "connect": connect}[action](address)), flush=True)
