"""Raw-socket protocol behaviour: pipelining, answer order, and refusal of bad frames."""
from __future__ import annotations

import random
import socket
import struct

import pytest

from rafka.net.client import KafkaConnection
from rafka.partition_worker.record_batch import Record, encode_batch

API_VERSIONS, METADATA, PRODUCE, FETCH, LIST_OFFSETS, CREATE_TOPICS = 18, 3, 0, 1, 2, 19


@pytest.fixture(scope="module")
def raw_topic(rafka_cluster):
    topic = "raw-protocol"
    with KafkaConnection.to(rafka_cluster.bootstrap_servers) as conn:
        body = conn.request(CREATE_TOPICS, 5, {"topics": [{"name": topic, "num_partitions": 1,
                                                           "replication_factor": 1, "assignments": [],
                                                           "configs": []}],
                                               "timeout_ms": 30000, "validate_only": False})
    assert body["topics"][0]["error_code"] == 0, body
    return topic


def produce_body(topic: str, records: bytes, acks: int = 1) -> dict:
    return {"transactional_id": None, "acks": acks, "timeout_ms": 30000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": records}]}]}


def fetch_body(topic: str, offset: int) -> dict:
    return {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": 0,
            "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": topic, "partitions": [{"partition": 0, "current_leader_epoch": -1,
                                                        "fetch_offset": offset, "last_fetched_epoch": -1,
                                                        "log_start_offset": -1,
                                                        "partition_max_bytes": 1 << 20}]}],
            "forgotten_topics_data": [], "rack_id": ""}


def test_fifty_pipelined_mixed_requests_are_answered_in_order(rafka_cluster, raw_topic):
    conn = KafkaConnection.to(rafka_cluster.bootstrap_servers)
    batch = encode_batch([Record(0, 1_700_000_000_000, b"k", b"v" * 50)])
    sent = []
    for i in range(50):
        kind = i % 6
        if kind == 0:
            sent.append((conn.send(API_VERSIONS, 3, {"client_software_name": "raw", "client_software_version": "1"}),
                         API_VERSIONS))
        elif kind == 1:
            sent.append((conn.send(METADATA, 12, {"topics": [{"topic_id": None, "name": raw_topic}],
                                                  "allow_auto_topic_creation": False,
                                                  "include_topic_authorized_operations": False}), METADATA))
        elif kind == 2:
            sent.append((conn.send(PRODUCE, 9, produce_body(raw_topic, batch)), PRODUCE))
        elif kind == 3:
            conn.send(PRODUCE, 9, produce_body(raw_topic, batch, acks=0), expect_response=False)
        elif kind == 4:
            sent.append((conn.send(FETCH, 12, fetch_body(raw_topic, 0)), FETCH))
        else:
            sent.append((conn.send(LIST_OFFSETS, 7, {"replica_id": -1, "isolation_level": 0, "topics": [
                {"name": raw_topic, "partitions": [{"partition_index": 0, "current_leader_epoch": -1,
                                                    "timestamp": -1}]}]}), LIST_OFFSETS))
    answers = [conn.receive() for _ in sent]
    conn.close()
    assert [cid for cid, _ in answers] == [cid for cid, _ in sent]
    produce_offsets = [body["responses"][0]["partition_responses"][0]["base_offset"]
                       for (cid, body), (_, key) in zip(answers, sent) if key == PRODUCE]
    assert produce_offsets == sorted(produce_offsets) and len(set(produce_offsets)) == len(produce_offsets)
    for (cid, body), (_, key) in zip(answers, sent):
        if key == PRODUCE:
            assert body["responses"][0]["partition_responses"][0]["error_code"] == 0
        if key == METADATA:
            assert body["topics"][0]["error_code"] == 0


def assert_closed(sock: socket.socket, timeout_s: float = 10) -> None:
    sock.settimeout(timeout_s)
    try:
        data = sock.recv(1 << 16)
    except ConnectionResetError:
        return
    assert data == b"", f"expected the broker to close the connection, got {data[:40]!r}"


def metadata_works(address: str) -> None:
    with KafkaConnection.to(address) as conn:
        body = conn.request(METADATA, 1, {"topics": None})
    assert body["brokers"], body


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


BAD_FRAMES = {
    "garbage": lambda: frame(random.Random(7).randbytes(64)),
    "unknown-api-key": lambda: frame(struct.pack(">hhih", 999, 0, 1, -1)),
    "unsupported-version": lambda: frame(struct.pack(">hhih", METADATA, 99, 1, -1)),
    "produce-v0-refused": lambda: frame(struct.pack(">hhih", PRODUCE, 0, 1, -1) + b"\x00" * 10),
    "truncated-body": lambda: frame(struct.pack(">hhih", METADATA, 1, 1, -1) + struct.pack(">i", 1000)),
    "absurd-length": lambda: struct.pack(">i", 0x7FFFFFFF) + b"\x00" * 16,
    "negative-length": lambda: struct.pack(">i", -5) + b"\x00" * 16,
    "zero-length": lambda: struct.pack(">i", 0),
    "huge-string-length": lambda: frame(struct.pack(">hhih", METADATA, 1, 1, 0x7FFF) + b"abc"),
}


@pytest.mark.parametrize("kind", list(BAD_FRAMES))
def test_bad_frame_closes_only_its_own_connection(rafka_cluster, kind):
    host, _, port = rafka_cluster.bootstrap_servers.rpartition(":")
    bystander = KafkaConnection(host, int(port))
    bad = socket.create_connection((host, int(port)))
    bad.sendall(BAD_FRAMES[kind]())
    assert_closed(bad)
    bad.close()
    # The bystander connection and new connections are still served.
    assert bystander.request(API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})[
        "error_code"] == 0
    bystander.close()
    metadata_works(rafka_cluster.bootstrap_servers)


def test_truncated_frame_then_hangup_is_dropped(rafka_cluster):
    host, _, port = rafka_cluster.bootstrap_servers.rpartition(":")
    bad = socket.create_connection((host, int(port)))
    bad.sendall(struct.pack(">i", 100) + b"\x00\x03\x00\x01")
    bad.shutdown(socket.SHUT_WR)
    assert_closed(bad)
    bad.close()
    metadata_works(rafka_cluster.bootstrap_servers)


def test_api_versions_of_unknown_version_answers_v0_with_ranges(rafka_cluster):
    host, _, port = rafka_cluster.bootstrap_servers.rpartition(":")
    sock = socket.create_connection((host, int(port)))
    sock.sendall(frame(struct.pack(">hhih", API_VERSIONS, 77, 42, -1)))
    conn_file = sock.makefile("rb")
    (size,) = struct.unpack(">i", conn_file.read(4))
    body = conn_file.read(size)
    correlation_id, error_code, count = struct.unpack(">ihi", body[:10])
    assert correlation_id == 42
    assert error_code == 35  # UNSUPPORTED_VERSION
    ranges = {struct.unpack(">h", body[10 + 6 * i:12 + 6 * i])[0]: struct.unpack(">hh", body[12 + 6 * i:16 + 6 * i])
              for i in range(count)}
    assert ranges[PRODUCE][0] == 0 and ranges[API_VERSIONS][0] == 0
    sock.close()


def test_errors_carry_kafka_codes(rafka_cluster, raw_topic):
    with KafkaConnection.to(rafka_cluster.bootstrap_servers) as conn:
        good = encode_batch([Record(0, 1_700_000_000_000, b"k", b"v")])
        corrupt = bytearray(good)
        corrupt[-1] ^= 0xFF
        unknown = conn.request(PRODUCE, 9, produce_body("no-such-topic-here", good))
        assert unknown["responses"][0]["partition_responses"][0]["error_code"] == 3  # UNKNOWN_TOPIC_OR_PARTITION
        bad_crc = conn.request(PRODUCE, 9, produce_body(raw_topic, bytes(corrupt)))
        assert bad_crc["responses"][0]["partition_responses"][0]["error_code"] == 2  # CORRUPT_MESSAGE
        bad_acks = conn.request(PRODUCE, 9, produce_body(raw_topic, good, acks=2))
        assert bad_acks["responses"][0]["partition_responses"][0]["error_code"] == 21  # INVALID_REQUIRED_ACKS
        too_large = encode_batch([Record(0, 1_700_000_000_000, b"k", b"x" * 2_000_000)])
        big = conn.request(PRODUCE, 9, produce_body(raw_topic, too_large))
        assert big["responses"][0]["partition_responses"][0]["error_code"] == 10  # MESSAGE_TOO_LARGE
        out_of_range = conn.request(FETCH, 12, fetch_body(raw_topic, 10_000_000))
        assert out_of_range["responses"][0]["partitions"][0]["error_code"] == 1  # OFFSET_OUT_OF_RANGE
        create = {"topics": [{"name": n, "num_partitions": p, "replication_factor": 1, "assignments": [],
                              "configs": []} for n, p in (("bad/name", 1), (raw_topic, 1), ("zero-parts", 0))],
                  "timeout_ms": 10000, "validate_only": False}
        codes = {t["name"]: t["error_code"] for t in conn.request(CREATE_TOPICS, 5, create)["topics"]}
        assert codes == {"bad/name": 17, raw_topic: 36, "zero-parts": 37}
        meta = conn.request(METADATA, 12, {"topics": [{"topic_id": None, "name": "never-made"}],
                                           "allow_auto_topic_creation": False,
                                           "include_topic_authorized_operations": False})
        assert meta["topics"][0]["error_code"] == 3
        # Still serving after all of that.
        ok = conn.request(PRODUCE, 9, produce_body(raw_topic, good))
        assert ok["responses"][0]["partition_responses"][0]["error_code"] == 0


def test_stored_batch_is_the_clients_bytes_but_offset_and_epoch(rafka_cluster, raw_topic):
    from pathlib import Path

    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for i in range(20):
        builder.append(i, timestamp=1_700_000_000_000 + i, key=b"key-%d" % i, value=b"value-%d" % i,
                       headers=[("h", b"x")])
    sent = bytes(builder.build())
    with KafkaConnection.to(rafka_cluster.bootstrap_servers) as conn:
        body = conn.request(PRODUCE, 9, produce_body(raw_topic, sent))
    result = body["responses"][0]["partition_responses"][0]
    assert result["error_code"] == 0
    base_offset = result["base_offset"]
    part_dir = next(Path(rafka_cluster.data_dir).glob(f"broker-*/logs/{raw_topic}-0"))
    from rafka.partition_worker.record_batch import iter_batches
    for segment in sorted(part_dir.glob("*.log")):
        data = memoryview(segment.read_bytes())
        for header in iter_batches(data):
            if header.base_offset == base_offset:
                stored = bytes(data[header.position:header.position + header.size])
                break
        else:
            continue
        break
    assert len(stored) == len(sent)
    assert struct.unpack(">q", stored[:8])[0] == base_offset
    assert stored[8:12] == sent[8:12]          # batch length
    assert stored[16:] == sent[16:]            # magic, CRC, attributes, records: untouched
