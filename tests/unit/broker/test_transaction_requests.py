"""Transactional requests through the front end's dispatcher to a real leader replica on its
Unix socket (no Ray): a transactional Produce (refused without a transactional id, and where
the KIP-890 verifier says no), WriteTxnMarkers routed to the leader, Fetch and ListOffsets with
isolation_level 0 and 1 as a Kafka client decodes them."""
from __future__ import annotations

import asyncio
import uuid

from rafka.common.errors import ErrorCode
from rafka.common.metadata import BrokerInfo, ClusterMetadata, PartitionInfo, TopicInfo
from rafka.common.types import TopicPartition
from rafka.net.data_plane import ReplicaChannel
from rafka.net.handlers import FETCH, LIST_OFFSETS, PRODUCE, RequestDispatcher
from rafka.net.protocol import codec
from rafka.net.starting_leaders import StartingLeaders
from rafka.net.txn_marker_handlers import WRITE_TXN_MARKERS
from rafka.net.txn_produce import TransactionalWrite
from rafka.partition_worker.messages import LATEST_TIMESTAMP
from rafka.partition_worker.record_batch import decode_records, iter_batches
from rafka.partition_worker.segment_files import read_region
from tests.unit.broker.test_replica_channel import batch, run_with_replica
from tests.unit.broker.test_replica_transactions import PID, txn_batch

TP = TopicPartition("t", 0)


class LeaderHere:
    """Broker 1 leads t-0 (the replica's channel); t-1 exists, led elsewhere."""

    broker_id = 1
    auto_create_topics = False

    def __init__(self, channel: ReplicaChannel) -> None:
        self._channel = channel
        self.starting = StartingLeaders()
        self.metadata = ClusterMetadata(brokers={1: BrokerInfo(1, "127.0.0.1", 9092)}, topics={
            "t": TopicInfo("t", uuid.uuid4(), {0: PartitionInfo(0, 1, 3, (1,), (1,)),
                                               1: PartitionInfo(1, 2, 3, (2,), (2,))})})

    def channel(self, tp: TopicPartition) -> ReplicaChannel | None:
        return self._channel if tp == TP else None


class Refusing:
    """A KIP-890 verifier that refuses every partition (the coordinator never added them)."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, list[TransactionalWrite]]] = []

    async def verify(self, transactional_id, writes):
        self.asked.append((transactional_id, writes))
        return {w.tp: ErrorCode.INVALID_TXN_STATE for w in writes}


async def call(dispatcher: RequestDispatcher, key: int, version: int, body: dict) -> dict:
    parts = await dispatcher.handle(memoryview(codec.encode_request(key, version, 1, "txn-test", body))[4:],
                                    "127.0.0.1:5555")
    frame = b"".join(bytes(p) if not hasattr(p, "regions") else
                     b"".join(read_region(r.path, r.position, r.length, r.inode) for r in p.regions) for p in parts)
    return codec.decode_response(key, version, frame)[1]


async def produce(dispatcher: RequestDispatcher, records: bytes, transactional_id: str | None) -> ErrorCode:
    body = await call(dispatcher, PRODUCE, 9, {"transactional_id": transactional_id, "acks": -1, "timeout_ms": 5000,
                                               "topic_data": [{"name": "t", "partition_data": [
                                                   {"index": 0, "records": records}]}]})
    return body["responses"][0]["partition_responses"][0]["error_code"]


async def fetch(dispatcher: RequestDispatcher, isolation_level: int) -> dict:
    """A consumer's fetch from offset 0 (a wait as clients ask: answered at once when there is data)."""
    body = await call(dispatcher, FETCH, 11, {
        "replica_id": -1, "max_wait_ms": 200, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": isolation_level,
        "session_id": 0, "session_epoch": -1, "rack_id": "", "forgotten_topics_data": [],
        "topics": [{"topic": "t", "partitions": [{"partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
                                                  "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}]})
    return body["responses"][0]["partitions"][0]


def record_offsets(partition: dict) -> list[int]:
    data = partition["records"] or b""
    return [r.offset for h in iter_batches(data) for r in decode_records(data, h.position)[1]]


async def latest(dispatcher: RequestDispatcher, isolation_level: int) -> int:
    body = await call(dispatcher, LIST_OFFSETS, 5, {"replica_id": -1, "isolation_level": isolation_level, "topics": [
        {"name": "t", "partitions": [{"partition_index": 0, "current_leader_epoch": -1,
                                      "timestamp": LATEST_TIMESTAMP}]}]})
    return body["topics"][0]["partitions"][0]["offset"]


async def write_markers(dispatcher: RequestDispatcher, version: int, commit: bool, partitions: list[int],
                        producer_epoch: int = 0) -> dict[int, ErrorCode]:
    body = await call(dispatcher, WRITE_TXN_MARKERS, version, {"markers": [{
        "producer_id": PID, "producer_epoch": producer_epoch, "transaction_result": commit, "coordinator_epoch": 0,
        "topics": [{"name": "t", "partition_indexes": partitions}, {"name": "gone", "partition_indexes": [0]}]}]})
    (marker,) = body["markers"]
    assert marker["producer_id"] == PID
    codes = {(t["name"], p["partition_index"]): p["error_code"] for t in marker["topics"] for p in t["partitions"]}
    assert codes.pop(("gone", 0)) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return {index: code for (_, index), code in codes.items()}


def test_a_transactional_produce_needs_a_transactional_id_and_then_opens_a_transaction(short_dir):
    async def scenario(replica, channel):
        dispatcher = RequestDispatcher(LeaderHere(channel))
        assert await produce(dispatcher, txn_batch(0), None) == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        assert replica.status().log_end_offset == 0
        assert await produce(dispatcher, batch(), "app-1") == ErrorCode.NONE   # a plain batch with an id is fine
        assert await produce(dispatcher, txn_batch(0), "app-1") == ErrorCode.NONE
        assert (await latest(dispatcher, 1), await latest(dispatcher, 0)) == (3, 5)   # open from offset 3
    run_with_replica(short_dir, scenario)


def test_a_transactional_produce_the_verifier_refuses_writes_nothing(short_dir):
    async def scenario(replica, channel):
        verifier = Refusing()
        dispatcher = RequestDispatcher(LeaderHere(channel), verifier)
        assert await produce(dispatcher, txn_batch(0), "app-1") == ErrorCode.INVALID_TXN_STATE
        assert verifier.asked == [("app-1", [TransactionalWrite(TP, PID, 0)])]
        assert await produce(dispatcher, batch(), "app-1") == ErrorCode.NONE   # nothing transactional to verify
        assert len(verifier.asked) == 1 and replica.status().log_end_offset == 3
    run_with_replica(short_dir, scenario)


def test_fetch_answers_read_committed_up_to_the_lso_with_the_aborted_transactions(short_dir):
    async def scenario(replica, channel):
        dispatcher = RequestDispatcher(LeaderHere(channel))
        assert await produce(dispatcher, txn_batch(0), "app-1") == ErrorCode.NONE     # 0-1
        assert await produce(dispatcher, batch(), None) == ErrorCode.NONE              # 2-4
        uncommitted, committed = await fetch(dispatcher, 0), await fetch(dispatcher, 1)
        assert (record_offsets(uncommitted), uncommitted["last_stable_offset"]) == ([0, 1, 2, 3, 4], 0)
        assert uncommitted["aborted_transactions"] is None                            # null, as Kafka's
        assert (record_offsets(committed), committed["last_stable_offset"], committed["high_watermark"]) == ([], 0, 5)
        assert committed["aborted_transactions"] == []

        assert await write_markers(dispatcher, 1, False, [0, 1, 9]) == {
            0: ErrorCode.NONE, 1: ErrorCode.NOT_LEADER_OR_FOLLOWER, 9: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        committed = await fetch(dispatcher, 1)
        assert record_offsets(committed) == [0, 1, 2, 3, 4, 5]       # 5: the marker; a consumer drops 0-1 by the list
        assert committed["aborted_transactions"] == [{"producer_id": PID, "first_offset": 0}]
        assert committed["last_stable_offset"] == 6 and await latest(dispatcher, 1) == 6
        assert await write_markers(dispatcher, 0, False, [0]) == {0: ErrorCode.NONE}   # a retry (v0), answered NONE
        assert await write_markers(dispatcher, 1, True, [0], producer_epoch=-1) == {0: ErrorCode.INVALID_PRODUCER_EPOCH}
    run_with_replica(short_dir, scenario)
