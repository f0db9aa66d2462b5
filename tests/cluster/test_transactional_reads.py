"""A transaction through the real data path of a running broker, read back by a real client.

The test plays most of the transaction coordinator's part with rafka's own protocol encoders:
the producers get their ids and add the partition through the real coordinator (so that the
leader's KIP-890 check lets their batches in), then a transactional Produce, then the
WriteTxnMarkers request a coordinator sends to the partition's leader. A confluent-kafka
consumer with `isolation.level=read_committed` must stop at the open transaction, then see
none of the aborted records and all of the committed ones; a read_uncommitted consumer sees
every record.
"""
from __future__ import annotations

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from rafka.common.errors import ErrorCode
from rafka.net.client import KafkaConnection
from rafka.net.handlers import FETCH, PRODUCE
from rafka.net.txn_marker_handlers import WRITE_TXN_MARKERS
from rafka.partition_worker.record_batch import Record, encode_batch
from tests.waiting import wait_until

TOPIC = "txn-reads"
FIND_COORDINATOR, INIT_PRODUCER_ID, ADD_PARTITIONS_TO_TXN = 10, 22, 24
RETRIABLE = (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NOT_COORDINATOR,
             ErrorCode.CONCURRENT_TRANSACTIONS)


def _answered(request) -> dict:  # noqa: ANN001 - a callable that sends one request
    return wait_until(lambda: (lambda b: b if b["error_code"] not in RETRIABLE else None)(request()),
                      timeout_s=30, message="a coordinator's answer")


def transactional_producer(bootstrap: str, txn_id: str) -> int:
    """The producer id its coordinator gives `txn_id` (epoch 0), with the partition added."""
    with KafkaConnection.to(bootstrap) as connection:
        found = _answered(lambda: connection.request(FIND_COORDINATOR, 3, {"key": txn_id, "key_type": 1}))
    with KafkaConnection.to(f"{found['host']}:{found['port']}") as coordinator:
        init = _answered(lambda: coordinator.request(INIT_PRODUCER_ID, 4, {
            "transactional_id": txn_id, "transaction_timeout_ms": 600_000, "producer_id": -1, "producer_epoch": -1}))
        assert init["error_code"] == 0 and init["producer_epoch"] == 0, init
        added = coordinator.request(ADD_PARTITIONS_TO_TXN, 3, {
            "v3_and_below_transactional_id": txn_id, "v3_and_below_producer_id": init["producer_id"],
            "v3_and_below_producer_epoch": 0, "v3_and_below_topics": [{"name": TOPIC, "partitions": [0]}]})
        assert added["results_by_topic_v3_and_below"][0]["results_by_partition"][0]["partition_error_code"] == 0
    return init["producer_id"]


def records(values: list[bytes], producer_id: int = -1, transactional: bool = False) -> bytes:
    return encode_batch([Record(i, 1_700_000_000_000, None, v) for i, v in enumerate(values)],
                        producer_id=producer_id, producer_epoch=0 if producer_id >= 0 else -1,
                        base_sequence=0 if producer_id >= 0 else -1, is_transactional=transactional)


def produce(connection: KafkaConnection, batch: bytes, transactional_id: str | None) -> ErrorCode:
    body = connection.request(PRODUCE, 9, {"transactional_id": transactional_id, "acks": -1, "timeout_ms": 10_000,
                                           "topic_data": [{"name": TOPIC, "partition_data": [
                                               {"index": 0, "records": batch}]}]})
    return ErrorCode(body["responses"][0]["partition_responses"][0]["error_code"])


def write_marker(connection: KafkaConnection, producer_id: int, commit: bool) -> ErrorCode:
    body = connection.request(WRITE_TXN_MARKERS, 1, {"markers": [{
        "producer_id": producer_id, "producer_epoch": 0, "transaction_result": commit, "coordinator_epoch": 0,
        "topics": [{"name": TOPIC, "partition_indexes": [0]}]}]})
    return ErrorCode(body["markers"][0]["topics"][0]["partitions"][0]["error_code"])


def last_stable_offset(connection: KafkaConnection) -> int:
    body = connection.request(FETCH, 11, {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": 1,
        "session_id": 0, "session_epoch": -1, "rack_id": "", "forgotten_topics_data": [],
        "topics": [{"topic": TOPIC, "partitions": [{"partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
                                                    "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}]})
    return body["responses"][0]["partitions"][0]["last_stable_offset"]


def read_all(bootstrap: str, isolation: str, expected: int) -> list[bytes]:
    """The values a consumer with `isolation` reads from the start, once it has `expected` of them."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"txn-{isolation}", "enable.auto.commit": False,
                         "isolation.level": isolation})
    try:
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        got: list[bytes] = []
        wait_until(lambda: got.extend(m.value() for m in consumer.consume(100, timeout=0.5) if m.error() is None)
                   or len(got) >= expected, timeout_s=60, message=f"{expected} records read with {isolation}")
        assert not any(m.error() is None for m in consumer.consume(100, timeout=1.0))   # and nothing more
        return got
    finally:
        consumer.close()


def test_read_committed_skips_an_aborted_transaction_and_reads_a_committed_one(bootstrap):
    admin = AdminClient({"bootstrap.servers": bootstrap})   # (held: a client collected mid-call fails the call)
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(60)
    aborted_pid = transactional_producer(bootstrap, "cluster-txn")
    committed_pid = transactional_producer(bootstrap, "cluster-txn-2")
    with KafkaConnection.to(bootstrap) as connection:
        wait_until(lambda: produce(connection, records([b"before"]), None) is ErrorCode.NONE, timeout_s=60,
                   message="the partition's leader takes writes")                             # 0
        aborted = records([b"aborted-1", b"aborted-2"], aborted_pid, transactional=True)
        assert produce(connection, aborted, None) is ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        assert produce(connection, aborted, "cluster-txn") is ErrorCode.NONE                 # 1-2, open
        assert produce(connection, records([b"after"]), None) is ErrorCode.NONE              # 3
        assert last_stable_offset(connection) == 1                                           # held by the open one
        assert read_all(bootstrap, "read_committed", 1) == [b"before"]
        assert write_marker(connection, aborted_pid, commit=False) is ErrorCode.NONE         # 4
        assert write_marker(connection, aborted_pid, commit=False) is ErrorCode.NONE         # a retry: 5
        committed = records([b"committed-1", b"committed-2"], committed_pid, transactional=True)
        assert produce(connection, committed, "cluster-txn-2") is ErrorCode.NONE             # 6-7
        assert write_marker(connection, committed_pid, commit=True) is ErrorCode.NONE        # 8
        assert last_stable_offset(connection) == 9
    assert read_all(bootstrap, "read_committed", 4) == [b"before", b"after", b"committed-1", b"committed-2"]
    assert read_all(bootstrap, "read_uncommitted", 6) == [
        b"before", b"aborted-1", b"aborted-2", b"after", b"committed-1", b"committed-2"]
