"""Transactions with real clients (KIP-98, KIP-447, KIP-890 part 1): confluent-kafka's,
kafka-python's and aiokafka's transactional producers commit and abort across three partitions, and a
read_committed consumer sees exactly the committed records while read_uncommitted sees all;
a zombie producer is fenced; consume-transform-produce commits the group's offsets in the
transaction; a transactional produce to a partition not in the transaction is refused. The
tests marked `replicated` run on three brokers as well, where the coordinator writes markers to
other brokers (WriteTxnMarkers) and leaders verify with a remote coordinator."""
from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from rafka.common.errors import ErrorCode
from rafka.net.client import KafkaConnection
from rafka.net.group_handlers import FIND_COORDINATOR
from rafka.net.handlers import CREATE_TOPICS, METADATA, PRODUCE
from rafka.net.txn_handlers import INIT_PRODUCER_ID
from rafka.partition_worker.record_batch import Record, encode_batch
from tests.interop.clients import create_topic, leader_connection
from tests.waiting import wait_until

PARTITIONS = 3


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def txn_producer(bootstrap: str, txn_id: str) -> Producer:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id,
                         "transaction.timeout.ms": 60_000, "linger.ms": 0})
    producer.init_transactions(30)
    return producer


def send(producer: Producer, topic: str, values: list[bytes]) -> None:
    """One value to each partition in turn."""
    for i, value in enumerate(values):
        producer.produce(topic, value=value, partition=i % PARTITIONS)
    producer.flush(30)


def read_values(bootstrap: str, topic: str, isolation: str, expected: int, partitions: int = PARTITIONS) -> list[bytes]:
    """Every value `isolation` reads from the start of `topic`, once `expected` were read and
    a last poll found nothing more."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": _name("reader"), "enable.auto.commit": False,
                         "isolation.level": isolation})
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        got: list[bytes] = []
        wait_until(lambda: got.extend(m.value() for m in consumer.consume(100, timeout=0.2) if m.error() is None)
                   or len(got) >= expected, timeout_s=30, message=f"{expected} values read with {isolation}")
        got.extend(m.value() for m in consumer.consume(100, timeout=0.5) if m.error() is None)
        return got
    finally:
        consumer.close()


@pytest.mark.replicated
def test_confluent_commit_and_abort_across_three_partitions(bootstrap):
    topic = _name("txn-commit-abort")
    create_topic(bootstrap, topic, PARTITIONS)
    producer = txn_producer(bootstrap, _name("txn-ca"))
    committed = [b"c1-%d" % i for i in range(6)]
    aborted = [b"a-%d" % i for i in range(6)]
    later = [b"c2-%d" % i for i in range(3)]
    producer.begin_transaction()
    send(producer, topic, committed)
    producer.commit_transaction(30)
    producer.begin_transaction()
    send(producer, topic, aborted)
    producer.abort_transaction(30)
    producer.begin_transaction()
    send(producer, topic, later)
    producer.commit_transaction(30)

    assert sorted(read_values(bootstrap, topic, "read_committed", 9)) == sorted(committed + later)
    assert sorted(read_values(bootstrap, topic, "read_uncommitted", 15)) == sorted(committed + aborted + later)


def test_read_committed_stops_at_an_open_transaction(bootstrap):
    topic = _name("txn-open")
    create_topic(bootstrap, topic, PARTITIONS)
    producer = txn_producer(bootstrap, _name("txn-open"))
    producer.begin_transaction()
    send(producer, topic, [b"open-%d" % i for i in range(3)])
    assert read_values(bootstrap, topic, "read_uncommitted", 3) != []
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": _name("reader"),
                         "isolation.level": "read_committed"})
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        assert [m for m in consumer.consume(10, timeout=1.0) if m.error() is None] == []
        producer.commit_transaction(30)
        got: list[bytes] = []
        wait_until(lambda: got.extend(m.value() for m in consumer.consume(10, timeout=0.2) if m.error() is None)
                   or len(got) >= 3, timeout_s=30, message="the committed transaction read")
        assert sorted(got) == [b"open-0", b"open-1", b"open-2"]
    finally:
        consumer.close()


@pytest.mark.replicated
def test_a_zombie_producer_is_fenced_and_its_open_transaction_aborted(bootstrap):
    topic = _name("txn-zombie")
    create_topic(bootstrap, topic, PARTITIONS)
    txn_id = _name("txn-zombie")
    zombie = txn_producer(bootstrap, txn_id)
    zombie.begin_transaction()
    send(zombie, topic, [b"zombie-%d" % i for i in range(3)])
    successor = txn_producer(bootstrap, txn_id)   # fences the zombie, aborting its open transaction
    successor.begin_transaction()
    send(successor, topic, [b"successor-%d" % i for i in range(3)])
    successor.commit_transaction(30)
    with pytest.raises(KafkaException) as fenced:
        zombie.produce(topic, value=b"late", partition=0)
        zombie.flush(10)
        zombie.commit_transaction(10)
    assert fenced.value.args[0].fatal() or "fenced" in str(fenced.value).lower(), fenced.value
    assert sorted(read_values(bootstrap, topic, "read_committed", 3)) == [b"successor-0", b"successor-1",
                                                                            b"successor-2"]


@pytest.mark.replicated
def test_consume_transform_produce_commits_the_groups_offsets_in_the_transaction(bootstrap):
    source, sink, group = _name("ctp-in"), _name("ctp-out"), _name("ctp-group")
    create_topic(bootstrap, source, PARTITIONS)
    create_topic(bootstrap, sink, PARTITIONS)
    plain = Producer({"bootstrap.servers": bootstrap})
    for i in range(30):
        plain.produce(source, value=b"%d" % i, partition=i % PARTITIONS)
    assert plain.flush(30) == 0

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    producer = txn_producer(bootstrap, _name("ctp"))
    try:
        consumer.subscribe([source])
        seen = 0
        # An aborted round first: its output and its offsets must both vanish.
        batch = []
        wait_until(lambda: batch.extend(m for m in consumer.consume(30, timeout=0.2) if m.error() is None) or batch,
                   timeout_s=30, message="the first records consumed")
        producer.begin_transaction()
        for m in batch:
            producer.produce(sink, value=b"aborted-" + m.value(), partition=m.partition())
        producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                             consumer.consumer_group_metadata(), 30)
        producer.abort_transaction(30)
        assert all(tp.offset < 0 for tp in consumer.committed(
            [TopicPartition(source, p) for p in range(PARTITIONS)], timeout=30)), "an aborted commit is visible"
        for tp in consumer.assignment():   # rewind to the committed offsets (none: the start)
            consumer.seek(TopicPartition(tp.topic, tp.partition, 0))
        while seen < 30:
            batch = [m for m in consumer.consume(30, timeout=0.5) if m.error() is None]
            if not batch:
                continue
            producer.begin_transaction()
            for m in batch:
                producer.produce(sink, value=b"out-" + m.value(), partition=m.partition())
            producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                                 consumer.consumer_group_metadata(), 30)
            producer.commit_transaction(30)
            seen += len(batch)
        committed = consumer.committed([TopicPartition(source, p) for p in range(PARTITIONS)], timeout=30)
        ends = {p: consumer.get_watermark_offsets(TopicPartition(source, p), timeout=10)[1] for p in range(PARTITIONS)}
        assert {tp.partition: tp.offset for tp in committed} == ends
    finally:
        consumer.close()
    out = read_values(bootstrap, sink, "read_committed", 30)
    assert sorted(out) == sorted(b"out-%d" % i for i in range(30))


def _transactional_batch(producer_id: int, epoch: int) -> bytes:
    return encode_batch([Record(0, 1_700_000_000_000, None, b"not-added")], producer_id=producer_id,
                        producer_epoch=epoch, base_sequence=0, is_transactional=True)


@pytest.mark.replicated
def test_a_transactional_produce_to_a_partition_not_in_the_transaction_is_refused(bootstrap):
    topic, txn_id = _name("txn-unadded"), _name("txn-unadded")
    producer = txn_producer(bootstrap, txn_id)   # (has the coordinator's log created and loaded)
    with KafkaConnection.to(bootstrap) as conn:
        found = conn.request(FIND_COORDINATOR, 3, {"key": txn_id, "key_type": 1})
        assert found["error_code"] == 0, found
        brokers = sorted(b["node_id"] for b in conn.request(METADATA, 12, {
            "topics": [], "allow_auto_topic_creation": False, "include_topic_authorized_operations": False})["brokers"])
        # On three brokers the partition's leader is not the coordinator: it verifies remotely.
        others = [b for b in brokers if b != found["node_id"]] or brokers
        replicas = others + [b for b in brokers if b not in others]
        created = conn.request(CREATE_TOPICS, 5, {"topics": [{
            "name": topic, "num_partitions": -1, "replication_factor": -1, "configs": [],
            "assignments": [{"partition_index": 0, "broker_ids": replicas}]}], "timeout_ms": 30000,
            "validate_only": False})
        assert created["topics"][0]["error_code"] == 0, created
    with KafkaConnection.to(f"{found['host']}:{found['port']}") as conn:
        body = wait_until(lambda: (lambda b: b if b["error_code"] == 0 else None)(conn.request(
            INIT_PRODUCER_ID, 4, {"transactional_id": txn_id, "transaction_timeout_ms": 60_000,
                                  "producer_id": -1, "producer_epoch": -1})), timeout_s=30,
            message="InitProducerId answered")
    batch = _transactional_batch(body["producer_id"], body["producer_epoch"])
    with leader_connection(bootstrap, topic) as conn:
        answer = wait_until(lambda: (lambda a: a if a["responses"][0]["partition_responses"][0]["error_code"] not in (
            ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_ENOUGH_REPLICAS) else None)(conn.request(
                PRODUCE, 9, {"transactional_id": txn_id, "acks": -1, "timeout_ms": 10_000,
                             "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}]})),
            timeout_s=30, message="the produce answered")
    code = ErrorCode(answer["responses"][0]["partition_responses"][0]["error_code"])
    assert code is ErrorCode.INVALID_TXN_STATE
    assert read_values(bootstrap, topic, "read_uncommitted", 0, partitions=1) == []
    del producer


def test_kafka_python_commit_and_abort_across_three_partitions(bootstrap):
    from kafka import KafkaProducer

    topic = _name("txn-kp")
    create_topic(bootstrap, topic, PARTITIONS)
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=_name("txn-kp"))
    try:
        producer.init_transactions()
        producer.begin_transaction()
        for i in range(6):
            producer.send(topic, value=b"kp-c-%d" % i, partition=i % PARTITIONS)
        producer.commit_transaction()
        producer.begin_transaction()
        for i in range(6):
            producer.send(topic, value=b"kp-a-%d" % i, partition=i % PARTITIONS)
        producer.flush()
        producer.abort_transaction()
    finally:
        producer.close(10)
    assert sorted(read_values(bootstrap, topic, "read_committed", 6)) == sorted(b"kp-c-%d" % i for i in range(6))
    assert len(read_values(bootstrap, topic, "read_uncommitted", 12)) == 12


def test_aiokafka_commit_and_abort_across_three_partitions(bootstrap):
    import asyncio

    from aiokafka import AIOKafkaProducer

    topic = _name("txn-aio")
    create_topic(bootstrap, topic, PARTITIONS)

    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=_name("txn-aio"))
        await producer.start()
        try:
            async with producer.transaction():
                for i in range(6):
                    await producer.send_and_wait(topic, value=b"aio-c-%d" % i, partition=i % PARTITIONS)
            await producer.begin_transaction()
            for i in range(6):
                await producer.send_and_wait(topic, value=b"aio-a-%d" % i, partition=i % PARTITIONS)
            await producer.abort_transaction()
        finally:
            await producer.stop()

    asyncio.run(run())
    assert sorted(read_values(bootstrap, topic, "read_committed", 6)) == sorted(b"aio-c-%d" % i for i in range(6))
    assert len(read_values(bootstrap, topic, "read_uncommitted", 12)) == 12


def test_a_transaction_open_past_its_timeout_is_aborted_by_the_coordinator(bootstrap):
    topic = _name("txn-timeout")
    create_topic(bootstrap, topic, PARTITIONS)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": _name("txn-timeout"),
                         "transaction.timeout.ms": 3000, "linger.ms": 0})
    producer.init_transactions(30)
    producer.begin_transaction()
    failed: list = []
    for p in range(PARTITIONS):
        producer.produce(topic, value=b"abandoned-%d" % p, partition=p, on_delivery=lambda e, _m: e and failed.append(e))
    assert producer.flush(30) == 0 and not failed, failed
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": _name("reader"),
                         "isolation.level": "read_committed"})
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        # The coordinator aborts it (a marker on every partition): a read_committed consumer
        # reaches the end of each partition (its record at 0, the ABORT marker at 1) having read
        # nothing; until then it waits at the open transaction.
        def at_end() -> bool:
            assert [m for m in consumer.consume(10, timeout=0.2) if m.error() is None] == []
            return all(tp.offset == 2 for tp in consumer.position(
                [TopicPartition(topic, p) for p in range(PARTITIONS)]))
        wait_until(at_end, timeout_s=15, message="the abandoned transaction aborted")
    finally:
        consumer.close()
    with pytest.raises(KafkaException):   # its producer was fenced by the abort
        producer.commit_transaction(10)
