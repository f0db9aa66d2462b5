"""DescribeLogDirs and AlterReplicaLogDirs on a broker with two log dirs (KIP-113).

One broker, log.dirs=a,b, small segments, and moves throttled
(replica.alter.log.dirs.io.max.bytes.per.second) so that a move lasts long enough to be seen:
sizes reported are the segment files' bytes; a partition moves to the other dir while an
acks=all producer keeps writing, every acknowledged record reads back in order exactly once
from the new dir and the old dir lets go of it; refusals carry Kafka's codes; a move cut short
by a broker stop resumes when the broker starts again.
"""
from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

import pytest

from rafka.common.errors import ErrorCode
from rafka.net.client import KafkaConnection
from tests.waiting import wait_until

DESCRIBE_LOG_DIRS, ALTER_REPLICA_LOG_DIRS = 35, 34
THROTTLE = 1_500_000   # bytes/s: a few MB take a few seconds to move


@pytest.fixture(scope="module")
def two_dirs(rafka_cluster, zk_server, tmp_path_factory):
    """A one-broker cluster of its own (its own namespace and ZooKeeper chroot) with two log dirs."""
    from rafka.cluster import Cluster
    from rafka.common.config import BrokerConfig

    root = tmp_path_factory.mktemp("logdirs")
    dirs = (str(root / "a"), str(root / "b"))
    config = BrokerConfig.from_mapping({
        "zookeeper.connect": f"{zk_server}/logdirs-{uuid.uuid4().hex[:8]}", "log.dirs": ",".join(dirs),
        "log.segment.bytes": str(256 << 10), "log.segment.delete.delay.ms": "1000",
        "replica.alter.log.dirs.io.max.bytes.per.second": str(THROTTLE),
        "offsets.topic.num.partitions": "1", "auto.leader.rebalance.enable": "false"})
    cluster = Cluster(root / "cluster", brokers=1, first_port=0, config=config, namespace="rafka-logdirs")
    cluster.start()
    try:
        yield cluster, dirs
    finally:
        cluster.stop()


def create(bootstrap: str, topic: str, partitions: int) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, partitions, 1)])
    finally:
        admin.close()
    wait_until(lambda: all(p.get("leader_id", -1) >= 0 for p in partition_list(bootstrap, topic, partitions)),
               timeout_s=60, message=f"{topic} led")


def partition_list(bootstrap: str, topic: str, partitions: int) -> list[dict]:
    with KafkaConnection.to(bootstrap) as conn:
        meta = conn.request(3, 12, {"topics": [{"topic_id": None, "name": topic}], "allow_auto_topic_creation": False,
                                    "include_topic_authorized_operations": False})["topics"][0]
    got = {p["partition_index"]: p for p in meta["partitions"]} if meta["error_code"] == 0 else {}
    return [got.get(p, {}) for p in range(partitions)]


def describe(bootstrap: str, version: int = 4, topics: list[dict] | None = None) -> dict:
    with KafkaConnection.to(bootstrap) as conn:
        return conn.request(DESCRIBE_LOG_DIRS, version, {"topics": topics})


def alter(bootstrap: str, path: str, topic: str, partitions: list[int], version: int = 2) -> dict[int, int]:
    with KafkaConnection.to(bootstrap) as conn:
        answer = conn.request(ALTER_REPLICA_LOG_DIRS, version, {"dirs": [
            {"path": path, "topics": [{"name": topic, "partitions": partitions}]}]})
    return {p["partition_index"]: p["error_code"] for r in answer["results"] for p in r["partitions"]}


def logs_of(answer: dict, topic: str) -> dict[tuple[str, int, bool], tuple[int, int]]:
    """(log dir, partition, is future) -> (size, offset lag) of `topic`'s logs in an answer."""
    return {(r["log_dir"], p["partition_index"], p["is_future_key"]): (p["partition_size"], p["offset_lag"])
            for r in answer["results"] for t in r["topics"] if t["name"] == topic for p in t["partitions"]}


def segment_bytes(directory: Path) -> int:
    return sum(f.stat().st_size for f in directory.glob("[0-9]" * 20 + ".log"))


def produce(bootstrap: str, topic: str, count: int, partitions: int, size: int = 200) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    try:
        for i in range(count):
            producer.send(topic, b"%08d" % i + b"x" * size, partition=i % partitions)
        producer.flush(60)
    finally:
        producer.close()


def test_describe_log_dirs_reports_each_dir_with_the_sizes_of_its_logs(two_dirs):
    from kafka.admin import KafkaAdminClient

    cluster, dirs = two_dirs
    bootstrap = cluster.bootstrap_servers
    create(bootstrap, "sizes", 4)
    produce(bootstrap, "sizes", 4000, 4)
    on_disk = {(d, p): segment_bytes(Path(d) / f"sizes-{p}") for d in dirs for p in range(4)
               if (Path(d) / f"sizes-{p}").is_dir()}
    assert len(on_disk) == 4 and {d for d, _ in on_disk} == set(dirs)   # new partitions spread over both dirs
    assert all(size > 0 for size in on_disk.values())

    for version in range(5):
        answer = describe(bootstrap, version)
        assert [r["log_dir"] for r in answer["results"]] == list(dirs)
        assert all(r["error_code"] == 0 for r in answer["results"])
        assert logs_of(answer, "sizes") == {(d, p, False): (size, 0) for (d, p), size in on_disk.items()}
        if version >= 4:
            assert all(0 < r["usable_bytes"] <= r["total_bytes"] for r in answer["results"])

    one = describe(bootstrap, 2, [{"topic": "sizes", "partitions": [1]}])
    assert [k[1] for k in logs_of(one, "sizes")] == [1]

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        [broker] = admin.describe_log_dirs(topic_partitions={"sizes": [0, 1, 2, 3]})
    finally:
        admin.close()
    assert broker["broker"] == 0
    seen = {(r["log_dir"], p["partition_index"]): p["partition_size"]
            for r in broker["log_dirs"] for t in r["topics"] if t["name"] == "sizes" for p in t["partitions"]}
    assert seen == on_disk


def test_refusals_carry_kafkas_codes(two_dirs):
    cluster, dirs = two_dirs
    bootstrap = cluster.bootstrap_servers
    create(bootstrap, "refused", 1)
    here = next(d for d in dirs if (Path(d) / "refused-0").is_dir())
    for version in range(3):
        assert alter(bootstrap, "/no/such/dir", "refused", [0], version) == {0: ErrorCode.LOG_DIR_NOT_FOUND}
        assert alter(bootstrap, "relative/dir", "refused", [0], version) == {0: ErrorCode.LOG_DIR_NOT_FOUND}
        assert alter(bootstrap, dirs[0], "missing-topic", [0], version) == {0: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        assert alter(bootstrap, dirs[0], "refused", [5], version) == {5: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        assert alter(bootstrap, here, "refused", [0], version) == {0: ErrorCode.NONE}   # already there: no move
    assert not any(".future" in p.name or p.name.endswith("-future") for d in dirs for p in Path(d).iterdir())
    assert logs_of(describe(bootstrap), "refused") == {(here, 0, False): (0, 0)}


def test_the_cli_describes_and_moves_with_trustworthy_exit_codes(two_dirs):
    import json

    from tests.cluster.test_crash_restart import rafka

    cluster, dirs = two_dirs
    bootstrap = cluster.bootstrap_servers
    create(bootstrap, "cli", 1)
    produce(bootstrap, "cli", 500, 1)
    here = next(d for d in dirs if (Path(d) / "cli-0").is_dir())
    there = next(d for d in dirs if d != here)
    refused = rafka("log-dirs", "move", "cli:0", "/no/such/dir", "--bootstrap-server", bootstrap, "--output", "json")
    assert refused.returncode == 1 and json.loads(refused.stdout)["error"] == "LOG_DIR_NOT_FOUND"
    moved = rafka("log-dirs", "move", "cli:0", there, "--wait", "--bootstrap-server", bootstrap, "--output", "json")
    assert moved.returncode == 0, moved.stderr
    assert json.loads(moved.stdout) == {"topic": "cli", "partition": 0, "broker": 0, "log_dir": there,
                                        "error": "NONE", "done": True}
    described = rafka("log-dirs", "describe", "--topic-list", "cli", "--bootstrap-server", bootstrap,
                      "--output", "json")
    assert described.returncode == 0, described.stderr
    [broker] = json.loads(described.stdout)["brokers"]
    logs = {d["logDir"]: d["partitions"] for d in broker["logDirs"]}
    assert logs == {here: [], there: [{"partition": "cli-0", "size": segment_bytes(Path(there) / "cli-0"),
                                       "offsetLag": 0, "isFuture": False}]}
    assert rafka("log-dirs", "describe", "--bootstrap-server", bootstrap).returncode == 0


def test_a_partition_moves_under_acks_all_produce_and_loses_nothing(two_dirs):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import KafkaAdminClient
    from kafka.errors import NoError
    from kafka.structs import TopicPartitionReplica

    cluster, dirs = two_dirs
    bootstrap = cluster.bootstrap_servers
    create(bootstrap, "moving", 1)
    source = next(d for d in dirs if (Path(d) / "moving-0").is_dir())
    target = next(d for d in dirs if d != source)
    produce(bootstrap, "moving", 5000, 1, size=1000)   # ~5 MB before the move: a few seconds' copy
    acked: dict[int, bytes] = {}
    failed: list[Exception] = []
    latencies: list[float] = []
    stop = threading.Event()

    def keep_producing() -> None:
        """acks=all (kafka-python's default idempotent producer) at ~200 records/s, well under the
        move's copy rate, until told to stop and at least 1,000 records are out."""
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=2,
                                 delivery_timeout_ms=120_000, request_timeout_ms=30_000)
        futures = []
        i = 5000
        while not stop.is_set() or i < 6000:
            value = b"%08d" % i + b"v" * 1000
            sent = time.monotonic()
            future = producer.send("moving", value, partition=0)
            future.add_callback(lambda _, sent=sent: latencies.append(time.monotonic() - sent))
            futures.append((value, future))
            i += 1
            time.sleep(0.005)
        producer.flush(120)
        for value, future in futures:
            try:
                acked[future.get(timeout=120).offset] = value
            except Exception as e:  # noqa: BLE001 - reported below
                failed.append(e)
        producer.close()

    writer = threading.Thread(target=keep_producing)
    writer.start()
    try:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            outcome = admin.alter_replica_log_dirs({TopicPartitionReplica("moving", 0, 0): target})
        finally:
            admin.close()
        assert outcome == {TopicPartitionReplica("moving", 0, 0): NoError}
        future_seen = wait_until(lambda: (f := logs_of(describe(bootstrap), "moving").get((target, 0, True)))
                                 and f[0] > 0 and f, timeout_s=30, interval_s=0.05,
                                 message="the future log in the target dir, being copied")
        assert future_seen[1] > 0   # its lag: the replica's log end is ahead of it
        wait_until(lambda: set(logs_of(describe(bootstrap), "moving")) == {(target, 0, False)}, timeout_s=180,
                   message="the move done")
    finally:
        stop.set()
        writer.join(300)
    assert not writer.is_alive()
    assert not (Path(source) / "moving-0").exists()
    wait_until(lambda: not any(p.name.startswith("moving-0") for p in Path(source).iterdir()), timeout_s=30,
               message="the old log deleted after file.delete.delay.ms")
    assert len(acked) >= 1000 and not failed, failed[:3]
    print(f"\nmove under produce: {len(acked)} records acknowledged meanwhile, longest ack "
          f"{max(latencies):.2f} s, median {sorted(latencies)[len(latencies) // 2] * 1000:.1f} ms")

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest")
    consumer.assign([TopicPartition("moving", 0)])
    got: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + 120
    while len(got) < 5000 + len(acked) and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500, max_records=5000).values():
            got.extend((r.offset, r.value) for r in records)
    consumer.close()
    assert [int(v[:8]) for _, v in got[:5000]] == list(range(5000))
    assert [o for o, _ in got] == list(range(len(got)))           # in order, no gap, nothing twice
    values = [v for _, v in got]
    assert len(set(values)) == len(values)                        # no record written twice
    assert {o: v for o, v in got if o in acked} == acked          # every acknowledged record, where it was acked
    assert segment_bytes(Path(target) / "moving-0") == logs_of(describe(bootstrap), "moving")[(target, 0, False)][0]


def test_a_move_cut_short_by_a_broker_stop_resumes_at_its_next_start(two_dirs):
    cluster, dirs = two_dirs
    bootstrap = cluster.bootstrap_servers
    create(bootstrap, "resumed", 1)
    produce(bootstrap, "resumed", 30000, 1, size=300)   # ~10 MB: several seconds at the throttle
    source = next(d for d in dirs if (Path(d) / "resumed-0").is_dir())
    target = next(d for d in dirs if d != source)
    assert alter(bootstrap, target, "resumed", [0]) == {0: ErrorCode.NONE}
    wait_until(lambda: logs_of(describe(bootstrap), "resumed").get((target, 0, True)), timeout_s=30,
               message="the future log")
    cluster.stop_broker(0)
    futures = [p.name for p in Path(target).iterdir() if p.name.startswith("resumed-0.") and p.name.endswith("-future")]
    assert len(futures) == 1 and (Path(source) / "resumed-0").is_dir()

    cluster.restart_broker(0)
    bootstrap = cluster.bootstrap_servers
    wait_until(lambda: set(logs_of(describe(bootstrap), "resumed")) == {(target, 0, False)}, timeout_s=180,
               message="the resumed move done")
    assert (Path(target) / "resumed-0").is_dir() and not (Path(source) / "resumed-0").exists()
    from tests.cluster.test_replica_death import read

    values = read(bootstrap, "resumed", 0, 30000)
    assert [int(v[:8]) for v in values] == list(range(30000))


def test_replicas_of_an_rf3_partition_move_on_their_brokers_and_stay_in_sync(rafka_cluster, zk_connect, tmp_path):
    """Three brokers with two log dirs each, one RF=3 partition (min.insync.replicas=2): a
    follower's replica moves, then the leader's, under acks=all produce; every acknowledged
    record reads back, and the ISR is whole again afterwards."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    from rafka.cluster import Cluster
    from rafka.common.config import BrokerConfig
    from tests.cluster.test_crash_restart import assert_read_back

    base = BrokerConfig.from_mapping({"zookeeper.connect": zk_connect, "log.segment.bytes": str(256 << 10),
                                      "log.segment.delete.delay.ms": "1000", "auto.leader.rebalance.enable": "false",
                                      "offsets.topic.num.partitions": "1"})
    cluster = Cluster(tmp_path / "rf3", brokers=1, first_port=0, config=base, namespace="rafka-logdirs3")
    dirs = {b: (str(tmp_path / f"b{b}" / "a"), str(tmp_path / f"b{b}" / "b")) for b in range(3)}
    try:
        cluster.start_broker(cluster.broker_config(0).replace(log_dirs=dirs[0]))
        for b in (1, 2):
            cluster.start_broker(cluster.broker_config(b).replace(log_dirs=dirs[b]))
        addresses = {b: h.address for b, h in cluster.brokers.items()}
        bootstrap = cluster.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
        admin.create_topics([NewTopic("rf3", 1, 3, config={"min.insync.replicas": "2"})])["rf3"].result(60)
        meta = wait_until(lambda: (p := partition_list(bootstrap, "rf3", 1)[0]) and p.get("leader_id", -1) >= 0
                          and len(p["isr_nodes"]) == 3 and p, timeout_s=60, message="rf3 led with a full ISR")
        leader = meta["leader_id"]
        follower = next(b for b in range(3) if b != leader)
        acked: dict[tuple[int, int], bytes] = {}
        errors: list[str] = []
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2, "log_level": 3,
                             "batch.size": 65536,   # under segment.bytes (256 KiB here)
                             "enable.idempotence": True,
                             "message.timeout.ms": 120000})

        def send(first: int, count: int) -> None:
            for i in range(first, first + count):
                producer.produce("rf3", b"%08d" % i + b"r" * 500, partition=0,
                                 on_delivery=lambda err, msg: errors.append(str(err)) if err is not None
                                 else acked.__setitem__((msg.partition(), msg.offset()), msg.value()))
                producer.poll(0)

        send(0, 3000)
        for i, broker in enumerate((follower, leader)):
            here = next(d for d in dirs[broker] if (Path(d) / "rf3-0").is_dir())
            there = next(d for d in dirs[broker] if d != here)
            assert alter(addresses[broker], there, "rf3", [0]) == {0: ErrorCode.NONE}
            send(3000 + 1000 * i, 1000)   # while it moves
            wait_until(lambda: set(logs_of(describe(addresses[broker]), "rf3")) == {(there, 0, False)},
                       timeout_s=120, message=f"the replica of broker {broker} moved")
            assert not (Path(here) / "rf3-0").exists()
        assert producer.flush(120) == 0
        assert len(acked) == 5000, sorted(set(errors))[:5]
        wait_until(lambda: len(partition_list(bootstrap, "rf3", 1)[0].get("isr_nodes", [])) == 3, timeout_s=60,
                   message="the full ISR again")
        assert_read_back(bootstrap, "rf3", 1, acked, "logdirs-rf3")
        assert sorted(acked) == [(0, o) for o in range(5000)]   # nothing written twice
    finally:
        cluster.stop()
