"""Idempotent produce over a raw socket: InitProducerId, a request resent byte for byte,
a sequence gap and a stale epoch (KIP-98, KIP-360)."""
from __future__ import annotations

import pytest

from rafka.common.errors import ErrorCode
from rafka.net.client import KafkaConnection
from rafka.net.protocol import codec
from rafka.partition_worker.record_batch import Record, encode_batch, iter_batches
from tests.interop.clients import create_topic
from tests.interop.test_raw_protocol import fetch_body, produce_body

PRODUCE, FETCH, LIST_OFFSETS, INIT_PRODUCER_ID = 0, 1, 2, 22
TS = 1_700_000_000_000


@pytest.fixture(scope="module")
def topic(rafka_cluster):
    name = "idempotent-raw"
    create_topic(rafka_cluster.bootstrap_servers, name)
    return name


@pytest.fixture
def conn(rafka_cluster):
    with KafkaConnection.to(rafka_cluster.bootstrap_servers) as c:
        yield c


def init_producer_id(conn: KafkaConnection, version: int = 4, producer_id: int = -1, epoch: int = -1,
                     transactional_id: str | None = None) -> dict:
    return conn.request(INIT_PRODUCER_ID, version, {"transactional_id": transactional_id,
                                                    "transaction_timeout_ms": 60000,
                                                    "producer_id": producer_id, "producer_epoch": epoch})


def batch(pid: int, epoch: int, seq: int, n: int = 3) -> bytes:
    return encode_batch([Record(i, TS + i, b"k%d" % (seq + i), b"v" * 20) for i in range(n)],
                        producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def produce(conn: KafkaConnection, topic: str, records: bytes) -> dict:
    body = conn.request(PRODUCE, 9, produce_body(topic, records, acks=-1))
    return body["responses"][0]["partition_responses"][0]


def log_end(conn: KafkaConnection, topic: str) -> int:
    body = conn.request(LIST_OFFSETS, 7, {"replica_id": -1, "isolation_level": 0, "topics": [
        {"name": topic, "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}]}]})
    return body["topics"][0]["partitions"][0]["offset"]


def stored_sequences(conn: KafkaConnection, topic: str, pid: int) -> list[int]:
    """Base sequences of `pid`'s batches in the partition, read through Fetch."""
    body = conn.request(FETCH, 12, fetch_body(topic, 0))
    records = body["responses"][0]["partitions"][0]["records"] or b""
    return [h.base_sequence for h in iter_batches(memoryview(bytes(records))) if h.producer_id == pid]


@pytest.mark.parametrize("version", [0, 2, 3, 4, 5])
def test_init_producer_id_gives_distinct_ids_at_epoch_zero(conn, version):
    first, second = init_producer_id(conn, version), init_producer_id(conn, version)
    assert first["error_code"] == second["error_code"] == 0
    assert first["producer_id"] >= 0 and first["producer_id"] != second["producer_id"]
    assert first["producer_epoch"] == second["producer_epoch"] == 0


def test_kip_360_bump_of_the_current_epoch_and_fresh_id_for_unknown_ones(conn):
    given = init_producer_id(conn)
    bumped = init_producer_id(conn, producer_id=given["producer_id"], epoch=0)
    assert (bumped["error_code"], bumped["producer_id"], bumped["producer_epoch"]) == (0, given["producer_id"], 1)
    stale = init_producer_id(conn, producer_id=given["producer_id"], epoch=0)
    assert stale["producer_id"] != given["producer_id"] and stale["producer_epoch"] == 0
    unknown = init_producer_id(conn, producer_id=10**15, epoch=3)
    assert unknown["producer_id"] != 10**15 and unknown["producer_epoch"] == 0


def test_a_transactional_id_gets_its_producer_id_from_its_coordinator(conn):
    """Its coordinator (FindCoordinator key type 1; one broker here) gives it an id; the
    retriable answers while `__transaction_state` is created and loaded come first."""
    from tests.waiting import wait_until

    found = wait_until(lambda: (lambda b: b if b["error_code"] == 0 else None)(
        conn.request(10, 3, {"key": "tx-1", "key_type": 1})), timeout_s=30, message="the coordinator found")
    assert found["node_id"] == 0
    body = wait_until(lambda: (lambda b: b if b["error_code"] not in (
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NOT_COORDINATOR, ErrorCode.CONCURRENT_TRANSACTIONS)
        else None)(init_producer_id(conn, transactional_id="tx-1")), timeout_s=30, message="an answer")
    assert body["error_code"] == ErrorCode.NONE and body["producer_id"] >= 0
    assert init_producer_id(conn, transactional_id="")["error_code"] == ErrorCode.INVALID_REQUEST


def test_request_resent_byte_for_byte_gets_the_first_offset_and_one_copy(conn, topic):
    pid = init_producer_id(conn)["producer_id"]
    start = log_end(conn, topic)
    frame = codec.encode_request(PRODUCE, 9, 4242, "raw", produce_body(topic, batch(pid, 0, 0), acks=-1))
    answers = []
    for _ in range(2):
        conn.send_raw(frame)
        correlation_id, body = codec.decode_response(PRODUCE, 9, conn.read_frame())
        assert correlation_id == 4242
        answers.append(body["responses"][0]["partition_responses"][0])
    assert [a["error_code"] for a in answers] == [0, 0]
    assert answers[0]["base_offset"] == answers[1]["base_offset"] == start
    assert log_end(conn, topic) == start + 3
    assert stored_sequences(conn, topic, pid) == [0]


def test_sequence_gap_and_stale_epoch_get_their_errors_and_leave_the_log_alone(conn, topic):
    pid = init_producer_id(conn)["producer_id"]
    assert produce(conn, topic, batch(pid, 0, 0))["error_code"] == 0
    end = log_end(conn, topic)

    gap = produce(conn, topic, batch(pid, 0, 5))
    assert gap["error_code"] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER and gap["base_offset"] == -1
    assert log_end(conn, topic) == end
    assert init_producer_id(conn, producer_id=pid, epoch=0)["producer_epoch"] == 1
    assert produce(conn, topic, batch(pid, 1, 0))["error_code"] == 0
    end = log_end(conn, topic)
    stale = produce(conn, topic, batch(pid, 0, 3))
    assert stale["error_code"] == ErrorCode.INVALID_PRODUCER_EPOCH
    new_epoch_not_at_zero = produce(conn, topic, batch(pid, 2, 7))
    assert new_epoch_not_at_zero["error_code"] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert log_end(conn, topic) == end
    assert stored_sequences(conn, topic, pid) == [0, 0]


def test_five_pipelined_batches_resent_on_a_new_connection_are_all_duplicates(rafka_cluster, topic):
    with KafkaConnection.to(rafka_cluster.bootstrap_servers) as first:
        pid = init_producer_id(first)["producer_id"]
        for seq in range(0, 15, 3):
            first.send(PRODUCE, 9, produce_body(topic, batch(pid, 0, seq), acks=-1))
        offsets = [body["responses"][0]["partition_responses"][0]["base_offset"]
                   for _, body in (first.receive() for _ in range(5))]
    with KafkaConnection.to(rafka_cluster.bootstrap_servers) as second:
        end = log_end(second, topic)
        for seq in range(0, 15, 3):
            second.send(PRODUCE, 9, produce_body(topic, batch(pid, 0, seq), acks=-1))
        again = [body["responses"][0]["partition_responses"][0] for _, body in (second.receive() for _ in range(5))]
        assert [a["error_code"] for a in again] == [0] * 5
        assert [a["base_offset"] for a in again] == offsets
        assert log_end(second, topic) == end
