"""Failover under a real client: 3 brokers, RF=3 topics, min.insync.replicas=2, acks=all
producers (plain and idempotent) while brokers are killed -9 in turn and restarted on their
data. The drill itself is tools/failover_drill.py (its soak runs 50 cycles)."""
from __future__ import annotations

from tools.failover_drill import BROKERS, compare_replica_logs, drill_config, run_drill

CYCLES = 10
PARTITIONS = 1   # per topic: a restart starts 2 replica processes, cheap on this 2-core machine


def test_acknowledged_records_survive_brokers_killed_in_turn(rafka_cluster, tmp_path):
    from rafka.cluster import Cluster

    data_dir = tmp_path / "drill"
    cluster = Cluster(data_dir, brokers=BROKERS, first_port=0, config=drill_config(), namespace="rafka-drill")
    cluster.start()
    try:
        result = run_drill(cluster, CYCLES, partitions=PARTITIONS, progress=print)
    finally:
        cluster.stop()
    problems = result.problems + compare_replica_logs(data_dir, PARTITIONS)
    assert not problems, problems
    assert len(result.cycles) == CYCLES
    assert any(c.was_controller for c in result.cycles), "the controller's broker was never killed"
    assert result.read_back >= result.acknowledged > 1000
