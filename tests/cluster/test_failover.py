"""Failover under a real client: 3 brokers, RF=3 topics, min.insync.replicas=2, acks=all
producers (plain and idempotent) while brokers are killed -9 in turn and restarted on their
data. The drill itself is tools/failover_drill.py (its soak runs 50 cycles)."""
from __future__ import annotations

import json
import subprocess
import sys

from tools.failover_drill import BROKERS, compare_replica_logs, drill_config, drill_properties, run_drill

CYCLES = 10   # each broker killed three times or more, the controller's among them (the soak runs 50)
PARTITIONS = 1   # per topic: a restart starts 2 replica processes, cheap on this 2-core machine


def test_kill_command_exits_0_every_time_and_acknowledged_records_survive(tmp_path):
    """Through the `rafka` command, as an operator: `rafka up --detach` of 3 brokers, then 10
    times `rafka broker stop ID --kill` (each broker in turn) while the producers write, and
    `rafka broker start ID`. Every command exits 0, each kill's processes are gone when it
    returns (tools/cli_cluster.py checks both), and every acknowledged record reads back."""
    from tools.cli_cluster import CliCluster

    data_dir = tmp_path / "drill"
    cluster = CliCluster(data_dir, BROKERS, drill_properties()).start()
    try:
        result = run_drill(cluster, CYCLES, partitions=PARTITIONS, progress=print)
    finally:
        cluster.stop()
    problems = result.problems + compare_replica_logs(data_dir, PARTITIONS, result.leaders)
    assert not problems, problems
    assert len(result.cycles) == len(cluster.kills) == CYCLES
    assert [c.victim for c in result.cycles] == [i % BROKERS for i in range(CYCLES)]
    assert all(kill["ok"] and {f"coordinator:{kill['broker_id']}", f"frontend:{kill['broker_id']}"} <= set(kill["pids"])
               for kill in cluster.kills)
    assert any(c.was_controller for c in result.cycles), "the controller's broker was never killed"
    assert result.read_back >= result.acknowledged > 1000


def test_a_broker_on_a_fresh_disk_with_an_old_id_re_replicates_its_partitions(rafka_cluster, tmp_path):
    """Seed 000: a brand-new broker with the same id joins with the same partitions. Broker 2
    is killed, its log dir wiped, and it starts again empty: it fetches every partition from
    its leader from the start and rejoins the ISR with a byte-identical copy."""
    import shutil

    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    from rafka.cluster import Cluster
    from tests.waiting import wait_until
    from tools.failover_drill import TOPICS, partition_view

    data_dir = tmp_path / "fresh"
    cluster = Cluster(data_dir, brokers=BROKERS, first_port=0, config=drill_config(), namespace="rafka-fresh")
    cluster.start()
    try:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "log_level": 3})
        for future in admin.create_topics([NewTopic(t, 2, BROKERS) for t in TOPICS]).values():
            future.result(60)
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 5})
        for i in range(3000):
            producer.produce(list(TOPICS)[i % 2], b"value-%d" % i, partition=(i // 2) % 2)
        assert producer.flush(60) == 0

        def isr_full() -> bool:
            view = partition_view(admin, partitions=2)
            return view is not None and all(isr == (0, 1, 2) for _, isr in view.values())

        wait_until(isr_full, timeout_s=60, message="every ISR full")
        cluster.kill_broker(2)
        wiped = data_dir / "broker-2" / "logs"
        shutil.rmtree(wiped)
        cluster.restart_broker(2)
        wait_until(isr_full, timeout_s=90, message="the fresh broker back in every ISR")
        assert (wiped / "meta.properties").exists()
    finally:
        cluster.stop()
    problems = compare_replica_logs(data_dir, 2)
    assert not problems, problems
    assert all((wiped / f"{t}-{p}" / "00000000000000000000.log").stat().st_size > 10_000
               for t in TOPICS for p in (0, 1))


def test_preferred_leaders_come_back_by_elect_leaders(rafka_cluster, tmp_path):
    """After a broker returns, its preferred partitions are led elsewhere; ElectLeaders
    (the admin client's elect_leaders, kafka-leader-election.sh) moves them back, and says
    ELECTION_NOT_NEEDED for a partition already led by its preferred replica."""
    from confluent_kafka import ElectionType, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    from rafka.cluster import Cluster
    from tests.waiting import wait_until
    from tools.failover_drill import partition_view

    cluster = Cluster(tmp_path / "pref", brokers=BROKERS, first_port=0, namespace="rafka-pref",
                      config=drill_config(**{"auto.leader.rebalance.enable": "false"}))
    cluster.start()
    try:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "log_level": 3})
        admin.create_topics([NewTopic("pref", 3, BROKERS)])["pref"].result(60)
        partitions = admin.list_topics("pref", timeout=10).topics["pref"].partitions
        preferred = {p: m.replicas[0] for p, m in partitions.items()}

        def view() -> dict:
            return partition_view(admin, ["pref"], 3) or {}

        def isr_full() -> dict:
            v = view()
            return v if v and all(isr == (0, 1, 2) for _, isr in v.values()) else {}

        wait_until(isr_full, timeout_s=60, message="every ISR full")
        victim = preferred[0]
        cluster.kill_broker(victim)
        wait_until(lambda: (v := view()) and all(leader not in (-1, victim) for leader, _ in v.values()),
                   timeout_s=60, message="leadership moved off the killed broker")
        cluster.restart_broker(victim)
        back = wait_until(isr_full, timeout_s=90, message="the broker back in every ISR")
        assert back[("pref", 0)][0] != victim   # not moved back on its own: auto rebalance is off

        wanted = [TopicPartition("pref", p) for p in range(3)]
        results = admin.elect_leaders(ElectionType.PREFERRED, wanted).result(60)
        moved = {tp.partition for tp, error in results.items() if error is None}
        not_needed = {tp.partition for tp, error in results.items()
                      if error is not None and error.code() == 84}   # ELECTION_NOT_NEEDED
        assert 0 in moved and moved | not_needed == {0, 1, 2}
        wait_until(lambda: (v := view()) and all(v[("pref", p)][0] == preferred[p] for p in range(3)),
                   timeout_s=30, message="every partition led by its preferred replica")
        # The CLI (kafka-leader-election.sh's options): nothing left to elect, exit 0.
        cli = subprocess.run([sys.executable, "-m", "rafka.cli.main", "leader-election", "--election-type",
                              "preferred", "--all-topic-partitions", "--bootstrap-server", cluster.bootstrap_servers
                              .split(",")[0], "--output", "json"], capture_output=True, text=True, timeout=120)
        assert cli.returncode == 0, cli.stderr
        assert json.loads(cli.stdout) == {"election_type": "preferred", "results": []}
        cli = subprocess.run([sys.executable, "-m", "rafka.cli.main", "leader-election", "--unclean", "--topic", "pref",
                              "--bootstrap-server", cluster.bootstrap_servers.split(",")[0], "--output", "json"],
                             capture_output=True, text=True, timeout=120)
        assert cli.returncode == 0, cli.stderr   # every partition has a live leader: ELECTION_NOT_NEEDED
        assert {r["outcome"] for r in json.loads(cli.stdout)["results"]} == {"ELECTION_NOT_NEEDED"}
    finally:
        cluster.stop()
