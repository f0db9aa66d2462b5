"""CreatePartitions (API 37, KIP-195) against the session's broker: Kafka's refusals on the
wire, validate_only, a zero timeout, kafka-python's, confluent-kafka's and aiokafka's admin
clients growing a topic that is then produced to and consumed from, with the existing partitions left alone,
and `rafka topics alter`. The `replicated` test also runs on three brokers with RF=3, where the
new partitions must reach full ISRs."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rafka.common.errors import ErrorCode
from rafka.net.client import KafkaConnection
from tests.interop.clients import create_topic, topic_metadata
from tests.waiting import wait_until

CREATE_PARTITIONS = 37
VERSIONS = (0, 1, 2, 3)
RAFKA = [sys.executable, "-m", "rafka.cli.main"]


def create_partitions(bootstrap: str, topics: list[dict], *, version: int = 3, timeout_ms: int = 30000,
                      validate_only: bool = False) -> list[tuple[str, int, str | None]]:
    """(name, error code, message) of each result of one CreatePartitions request."""
    with KafkaConnection.to(bootstrap) as conn:
        body = conn.request(CREATE_PARTITIONS, version, {"topics": topics, "timeout_ms": timeout_ms,
                                                         "validate_only": validate_only})
    return [(r["name"], r["error_code"], r["error_message"]) for r in body["results"]]


def grow(name: str, count: int, assignments: list[list[int]] | None = None) -> dict:
    return {"name": name, "count": count,
            "assignments": None if assignments is None else [{"broker_ids": a} for a in assignments]}


def partitions(bootstrap: str, topic: str) -> dict[int, dict]:
    return {p["partition_index"]: p for p in topic_metadata(bootstrap, topic)["partitions"]}


def replica_pids(cluster, topic: str) -> dict[str, int]:
    """Pid of every replica process of `topic` on every broker, by actor name."""
    return {name: pid for status in cluster.broker_status(memory=False).values()
            for name, pid in status["pids"].items() if name.startswith("replica:") and f":{topic}-" in name}


def grown_to(bootstrap: str, topic: str, count: int) -> bool:
    found = partitions(bootstrap, topic)
    return sorted(found) == list(range(count)) and all(p["leader_id"] >= 0 for p in found.values())


@pytest.mark.parametrize("version", VERSIONS)
def test_refusals_carry_kafkas_codes_and_messages(bootstrap, version):
    create_topic(bootstrap, "cp-refused", partitions=2)
    answer = create_partitions(bootstrap, [
        grow("cp-missing", 3), grow("cp-refused", 1), grow("cp-refused-dup", 3), grow("cp-refused-dup", 4),
    ], version=version)
    assert answer == [
        ("cp-missing", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'cp-missing' does not exist."),
        ("cp-refused", ErrorCode.INVALID_PARTITIONS,
         "Topic currently has 2 partitions, which is higher than the requested 1."),
        ("cp-refused-dup", ErrorCode.INVALID_REQUEST, "Duplicate topic in request.")]
    refusals = [
        (grow("cp-refused", 2), ErrorCode.INVALID_PARTITIONS, "Topic already has 2 partitions."),
        (grow("cp-refused", 4, [[0], [7]]), ErrorCode.INVALID_REPLICA_ASSIGNMENT,
         "Unknown broker(s) in replica assignment: 7."),
        (grow("cp-refused", 4, [[0]]), ErrorCode.INVALID_REPLICA_ASSIGNMENT,
         "Increasing the number of partitions by 2 but 1 assignments provided."),
        (grow("cp-refused", 3, [[0, 0]]), ErrorCode.INVALID_REPLICA_ASSIGNMENT,
         "Duplicate brokers not allowed in replica assignment: 0, 0 for partition id 2."),
        (grow("cp-refused", 3, [[]]), ErrorCode.INVALID_REPLICA_ASSIGNMENT,
         "Cannot have replication factor of 0 for partition id 2."),
    ]
    for request, code, message in refusals:
        assert create_partitions(bootstrap, [request], version=version) == [("cp-refused", code, message)], request
    assert sorted(partitions(bootstrap, "cp-refused")) == [0, 1]


def test_validate_only_checks_without_adding(bootstrap):
    create_topic(bootstrap, "cp-validate", partitions=1)
    assert create_partitions(bootstrap, [grow("cp-validate", 3)], validate_only=True) == [("cp-validate", 0, None)]
    assert create_partitions(bootstrap, [grow("cp-validate", 1)], validate_only=True) == [
        ("cp-validate", ErrorCode.INVALID_PARTITIONS, "Topic already has 1 partitions.")]
    assert sorted(partitions(bootstrap, "cp-validate")) == [0]


def test_a_zero_timeout_answers_request_timed_out_and_still_adds(bootstrap):
    """Kafka answers a timeout <= 0 at once with REQUEST_TIMED_OUT; the partitions come all the same."""
    create_topic(bootstrap, "cp-no-wait", partitions=1)
    assert create_partitions(bootstrap, [grow("cp-no-wait", 2)], timeout_ms=0) == [
        ("cp-no-wait", ErrorCode.REQUEST_TIMED_OUT, None)]
    wait_until(lambda: grown_to(bootstrap, "cp-no-wait", 2), timeout_s=60, message="partition 1 with a leader")


def produce_and_consume_with_confluent(bootstrap: str, topic: str, targets: range) -> None:
    """One acks=all record to each partition of `targets`, read back from each."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for p in targets:
        producer.produce(topic, b"to-%d" % p, partition=p)
    assert producer.flush(60) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in targets])
    seen: dict[int, bytes] = {}
    wait_until(lambda: [seen.setdefault(m.partition(), m.value()) for m in consumer.consume(10, timeout=0.5)
                        if m.error() is None] is not None and len(seen) == len(targets),
               timeout_s=60, message="a record from every new partition")
    consumer.close()
    assert seen == {p: b"to-%d" % p for p in targets}


def test_kafka_python_admin_grows_a_topic_that_then_serves(rafka_cluster, bootstrap):
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic("cp-kafka-python", 2, 1)])
        wait_until(lambda: grown_to(bootstrap, "cp-kafka-python", 2), timeout_s=30, message="topic with leaders")
        before = {p: (m["leader_id"], m["leader_epoch"]) for p, m in partitions(bootstrap, "cp-kafka-python").items()}
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
        for p in (0, 1):   # new partitions start dormant (no process): a write starts each replica
            producer.send("cp-kafka-python", b"to-%d" % p, partition=p).get(timeout=30)
        producer.close()
        pids = replica_pids(rafka_cluster, "cp-kafka-python")
        assert len(pids) == 2, pids   # one broker, two partitions
        admin.create_partitions({"cp-kafka-python": 5})
        described = admin.describe_topics(["cp-kafka-python"])[0]
    finally:
        admin.close()
    assert sorted(p["partition_index"] for p in described["partitions"]) == [0, 1, 2, 3, 4]
    wait_until(lambda: grown_to(bootstrap, "cp-kafka-python", 5), timeout_s=30, message="five partitions led")
    # Existing partitions are untouched: same leaders, same epochs, same replica processes.
    now = partitions(bootstrap, "cp-kafka-python")
    assert {p: (now[p]["leader_id"], now[p]["leader_epoch"]) for p in before} == before
    assert {k: v for k, v in replica_pids(rafka_cluster, "cp-kafka-python").items() if k in pids} == pids
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    for p in (2, 3, 4):
        producer.send("cp-kafka-python", b"to-%d" % p, partition=p)
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, consumer_timeout_ms=20000, auto_offset_reset="earliest")
    consumer.assign([TopicPartition("cp-kafka-python", p) for p in (2, 3, 4)])
    seen = {}
    for message in consumer:
        seen[message.partition] = message.value
        if len(seen) == 3:
            break
    consumer.close()
    assert seen == {2: b"to-2", 3: b"to-3", 4: b"to-4"}


def test_confluent_admin_grows_a_topic_that_then_serves(bootstrap):
    from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("cp-confluent", 2)])["cp-confluent"].result(30)
    # librdkafka's default operation_timeout is 0: Kafka answers at once (REQUEST_TIMED_OUT, which
    # librdkafka reports as success) and the partitions are led a moment later.
    admin.create_partitions([NewPartitions("cp-confluent", 5)])["cp-confluent"].result(60)
    wait_until(lambda: grown_to(bootstrap, "cp-confluent", 5), timeout_s=60, message="five partitions led")
    described = admin.list_topics("cp-confluent", timeout=10).topics["cp-confluent"]
    assert sorted(described.partitions) == [0, 1, 2, 3, 4]
    produce_and_consume_with_confluent(bootstrap, "cp-confluent", range(2, 5))
    with pytest.raises(Exception) as refused:
        admin.create_partitions([NewPartitions("cp-confluent", 4)])["cp-confluent"].result(30)
    assert "which is higher than the requested 4" in str(refused.value)


def test_aiokafka_admin_grows_a_topic_and_refuses_a_shrink(bootstrap):
    import asyncio

    from aiokafka.admin import AIOKafkaAdminClient, NewPartitions
    from aiokafka.errors import InvalidPartitionsError

    create_topic(bootstrap, "cp-aiokafka", partitions=1)

    async def run() -> str:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            await admin.create_partitions({"cp-aiokafka": NewPartitions(total_count=3, new_assignments=None)})
            with pytest.raises(InvalidPartitionsError) as refused:
                await admin.create_partitions({"cp-aiokafka": NewPartitions(total_count=2, new_assignments=None)})
            return str(refused.value)
        finally:
            await admin.close()

    refusal = asyncio.run(run())
    # aiokafka sends the request's timeout (its request_timeout_ms): the answer came once all three were led.
    assert grown_to(bootstrap, "cp-aiokafka", 3)
    assert "Topic currently has 3 partitions, which is higher than the requested 2." in refusal
    produce_and_consume_with_confluent(bootstrap, "cp-aiokafka", range(1, 3))


@pytest.mark.replicated
def test_new_partitions_are_replicated_with_full_isrs(rafka_cluster, bootstrap):
    """On three brokers every topic is RF=3: the new partitions get three replicas spread as
    Kafka places them (each broker leads one), all in the ISR, and serve acks=all."""
    from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("cp-replicated", 1)])["cp-replicated"].result(30)
    admin.create_partitions([NewPartitions("cp-replicated", 3)], operation_timeout=60)["cp-replicated"].result(90)
    brokers = rafka_cluster.broker_count

    def full_isrs() -> bool:
        found = partitions(bootstrap, "cp-replicated")
        return sorted(found) == [0, 1, 2] and all(
            len(p["replica_nodes"]) == brokers and sorted(p["isr_nodes"]) == sorted(p["replica_nodes"])
            for p in found.values())

    wait_until(full_isrs, timeout_s=90, message="every partition with a full ISR")
    leaders = [p["leader_id"] for p in partitions(bootstrap, "cp-replicated").values()]
    assert len(set(leaders)) == brokers   # a continued round robin: one leader per broker
    produce_and_consume_with_confluent(bootstrap, "cp-replicated", range(1, 3))


def topics_cli(bootstrap: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*RAFKA, "topics", "--bootstrap-server", bootstrap, *args],
                          capture_output=True, text=True, timeout=120)


def test_rafka_topics_alter_adds_partitions(bootstrap):
    assert topics_cli(bootstrap, "create", "cp-cli", "--partitions", "1").returncode == 0
    grown = topics_cli(bootstrap, "alter", "cp-cli", "--partitions", "2", "--output", "json")
    assert grown.returncode == 0, grown.stderr
    assert json.loads(grown.stdout) == {"topic": "cp-cli", "partition_count": 2}
    # kafka-topics.sh's --replica-assignment lists every partition; the existing two are skipped.
    placed = topics_cli(bootstrap, "alter", "cp-cli", "--partitions", "3", "--replica-assignment", "0,0,0")
    assert placed.returncode == 0 and placed.stdout.strip() == "Topic cp-cli now has 3 partitions.", placed.stderr
    [described] = json.loads(topics_cli(bootstrap, "describe", "cp-cli", "--output", "json").stdout)
    assert described["partition_count"] == 3 and described["partitions"][2]["replicas"] == [0]
    same = topics_cli(bootstrap, "alter", "cp-cli", "--partitions", "3")
    assert same.returncode == 1 and "INVALID_PARTITIONS: Topic already has 3 partitions." in same.stderr
    missing = topics_cli(bootstrap, "alter", "cp-cli-missing", "--partitions", "3", "--replica-assignment", "0")
    assert missing.returncode == 1 and "cp-cli-missing" in missing.stderr
    assert topics_cli(bootstrap, "alter", "cp-cli").returncode == 2
