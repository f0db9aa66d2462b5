"""The replication APIs on one broker, as raw requests: OffsetForLeaderEpoch answers from the
leader's epoch cache with Kafka's fencing (KIP-320), and a Fetch carrying a broker id as
replica id is a follower's fetch, refused when that broker holds no replica."""
from __future__ import annotations

from rafka.common.errors import ErrorCode
from rafka.net.client import KafkaConnection

METADATA, FETCH, OFFSET_FOR_LEADER_EPOCH = 3, 1, 23
TOPIC = "epochs"


def create_and_fill(bootstrap: str, records: int) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(records):
        producer.produce(TOPIC, b"v%d" % i, partition=0)
    assert producer.flush(30) == 0


def delete(bootstrap: str) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.delete_topics([TOPIC])[TOPIC].result(30)


def epoch_end(conn: KafkaConnection, leader_epoch: int, current: int = -1, topic: str = TOPIC) -> tuple:
    answer = conn.request(OFFSET_FOR_LEADER_EPOCH, 4, {"replica_id": -1, "topics": [
        {"topic": topic, "partitions": [{"partition": 0, "current_leader_epoch": current,
                                         "leader_epoch": leader_epoch}]}]})
    p = answer["topics"][0]["partitions"][0]
    return ErrorCode(p["error_code"]), p["leader_epoch"], p["end_offset"]


def test_offset_for_leader_epoch_answers_from_the_epoch_cache(bootstrap):
    create_and_fill(bootstrap, 25)
    try:
        with KafkaConnection.to(bootstrap) as conn:
            meta = conn.request(METADATA, 12, {"topics": [{"topic_id": None, "name": TOPIC}],
                                               "allow_auto_topic_creation": False,
                                               "include_topic_authorized_operations": False})
            epoch = meta["topics"][0]["partitions"][0]["leader_epoch"]
            assert epoch_end(conn, epoch) == (ErrorCode.NONE, epoch, 25)          # the latest: the log end
            assert epoch_end(conn, epoch, current=epoch) == (ErrorCode.NONE, epoch, 25)
            assert epoch_end(conn, epoch + 7) == (ErrorCode.NONE, -1, -1)         # above the latest
            assert epoch_end(conn, epoch, current=epoch + 1)[0] is ErrorCode.UNKNOWN_LEADER_EPOCH
            if epoch > 0:
                assert epoch_end(conn, epoch, current=epoch - 1)[0] is ErrorCode.FENCED_LEADER_EPOCH
            assert epoch_end(conn, 0, topic="no-such-topic")[0] is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    finally:
        delete(bootstrap)


def test_a_fetch_from_a_broker_without_a_replica_is_refused(bootstrap):
    create_and_fill(bootstrap, 5)
    try:
        with KafkaConnection.to(bootstrap) as conn:
            answer = conn.request(FETCH, 11, {
                "replica_id": 7, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
                "session_id": 0, "session_epoch": -1, "rack_id": "", "forgotten_topics_data": [],
                "topics": [{"topic": TOPIC, "partitions": [{
                    "partition": 0, "current_leader_epoch": -1, "fetch_offset": 0, "log_start_offset": -1,
                    "partition_max_bytes": 1 << 20}]}]})
            p = answer["responses"][0]["partitions"][0]
            assert ErrorCode(p["error_code"]) is ErrorCode.NOT_LEADER_OR_FOLLOWER and not p["records"]
    finally:
        delete(bootstrap)
