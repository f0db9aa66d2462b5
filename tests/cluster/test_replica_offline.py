"""A leader replica's process killed alone on a 3-broker cluster (RF=3, min.insync.replicas=2):
its broker reports it offline, and the controller acts as Kafka's does on a log dir failure:
leadership moves to a live ISR member, the dead replica leaves the ISR, and every broker's
metadata says so; acks=all produces go on. When the broker has started the replica again, it
rejoins the ISR through its leader, and a preferred-leader election gives it its leadership
back with every acknowledged record."""
from __future__ import annotations

import os
import signal

from confluent_kafka import ElectionType
from confluent_kafka import TopicPartition as ClientPartition
from confluent_kafka.admin import AdminClient, NewTopic

from rafka.actors.naming import replica_name
from rafka.common.types import TopicPartition
from tests.cluster.test_replica_death import partitions, produce, read
from tests.waiting import wait_until

TOPIC = "offline"


def replica_pid(cluster, broker_id: int, tp: TopicPartition) -> int | None:
    import ray

    from rafka.cluster import find_broker

    pids = ray.get(find_broker(cluster.namespace, broker_id).replica_pids.remote(), timeout=30)
    return pids.get(replica_name(broker_id, tp))


def test_a_killed_leader_replica_hands_over_leaves_the_isr_and_comes_back(rafka_cluster, zk_connect, tmp_path):
    from rafka.cluster import Cluster
    from tools.failover_drill import drill_config

    cluster = Cluster(tmp_path / "offline", brokers=3, first_port=0, namespace="rafka-offline",
                      config=drill_config(**{"zookeeper.connect": zk_connect,
                                             "auto.leader.rebalance.enable": "false"}))
    cluster.start()
    try:
        addresses = {b: handle.address for b, handle in cluster.brokers.items()}
        bootstrap = cluster.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
        admin.create_topics([NewTopic(TOPIC, 1, 3, config={"min.insync.replicas": "2"})])[TOPIC].result(60)

        def everywhere(condition, message: str) -> dict[int, dict]:
            """Partition 0 as each broker's own Metadata shows it, once `condition` holds on all."""
            return {b: wait_until(lambda: (p := partitions(address, TOPIC).get(0)) is not None and condition(p) and p,
                                  timeout_s=30, interval_s=0.02, message=f"{message} on broker {b}")
                    for b, address in addresses.items()}

        seen = everywhere(lambda p: p["leader_id"] >= 0 and sorted(p["isr_nodes"]) == [0, 1, 2], "full ISR")
        victim = seen[0]["leader_id"]
        before = [b"before-%d" % i for i in range(50)]
        assert produce(bootstrap, TOPIC, 0, before) == list(range(50))
        tp = TopicPartition(TOPIC, 0)
        pid = replica_pid(cluster, victim, tp)
        os.kill(pid, signal.SIGKILL)

        # (a) Every broker: a new leader on another broker, the dead replica offline or out of the ISR.
        moved = everywhere(lambda p: p["leader_id"] not in (-1, victim), "leadership moved")
        for b, p in moved.items():
            assert victim in p["offline_replicas"] or victim not in p["isr_nodes"], (b, p)
        # (b) acks=all with min.insync.replicas=2 succeeds on the two live replicas.
        during = [b"during-%d" % i for i in range(10)]
        assert produce(bootstrap, TOPIC, 0, during) == list(range(50, 60))
        # (c) The replica runs again (a new process), rejoins the ISR, and is no longer offline.
        everywhere(lambda p: victim in p["isr_nodes"] and victim not in p["offline_replicas"], "back in the ISR")
        assert replica_pid(cluster, victim, tp) not in (None, pid)
        results = admin.elect_leaders(ElectionType.PREFERRED, [ClientPartition(TOPIC, 0)]).result(60)
        assert all(error is None for error in results.values()), results
        everywhere(lambda p: p["leader_id"] == victim, "leadership back by preferred election")
        assert read(bootstrap, TOPIC, 0, 60) == before + during
    finally:
        cluster.stop()
