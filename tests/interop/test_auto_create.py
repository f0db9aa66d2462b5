"""Auto-creation on Metadata answers at once, as Kafka does: LEADER_NOT_AVAILABLE for the unknown
topic while it is created in the background, so neither the client's request timeout nor the
requests queued behind it on the same connection wait for the creation."""
from __future__ import annotations

import asyncio
import logging
import time

from rafka.net.client import KafkaConnection
from tests.waiting import wait_until

API_VERSIONS, METADATA, DELETE_TOPICS = 18, 3, 20
LEADER_NOT_AVAILABLE = 5


def metadata_body(*topics: str, auto_create: bool) -> dict:
    return {"topics": [{"topic_id": None, "name": t} for t in topics], "allow_auto_topic_creation": auto_create,
            "include_topic_authorized_operations": False}


def delete_topics(bootstrap: str, *names: str) -> None:
    with KafkaConnection.to(bootstrap) as conn:
        conn.request(DELETE_TOPICS, 4, {"topic_names": list(names), "timeout_ms": 30000})


def test_raw_metadata_answers_leader_not_available_at_once_and_the_topic_follows(bootstrap):
    topic = "auto-create-raw"
    try:
        with KafkaConnection.to(bootstrap) as conn:
            # Pipelined: the Metadata that starts the creation, a second one while it runs, and an
            # ApiVersions behind them; all three answered in order without waiting for the creation.
            started = time.monotonic()
            conn.send(METADATA, 12, metadata_body(topic, auto_create=True))
            conn.send(METADATA, 12, metadata_body(topic, auto_create=True))
            conn.send(API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})
            answers = [conn.receive()[1] for _ in range(3)]
            elapsed_s = time.monotonic() - started
            assert [a["topics"][0]["error_code"] for a in answers[:2]] == [LEADER_NOT_AVAILABLE] * 2, answers
            assert answers[2]["error_code"] == 0
            created = wait_until(
                lambda: (t := conn.request(METADATA, 12, metadata_body(topic, auto_create=False))["topics"][0])
                and t["error_code"] == 0 and t["partitions"] and t["partitions"][0]["leader_id"] >= 0 and t,
                timeout_s=30, message="auto-created topic has a leader")
        assert len(created["partitions"]) == 1
        assert elapsed_s < 5.0, f"answers took {elapsed_s:.3f} s"
    finally:
        delete_topics(bootstrap, topic)


def test_aiokafka_with_a_400_ms_request_timeout_never_times_out_on_metadata(bootstrap, caplog):
    """aiokafka's own test_producer_send_error starts a producer with request_timeout_ms=400 and
    sends to a topic that does not exist yet. A Metadata request that waits for the creation
    outlives that timeout: aiokafka logs "Unable to request metadata", drops the connection,
    and fails the send when creation is slow."""
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import (KafkaTimeoutError, LeaderNotAvailableError, NotLeaderForPartitionError,
                                 RequestTimedOutError, UnknownTopicOrPartitionError)

    topic = "auto-create-aiokafka"

    async def run() -> int:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, retry_backoff_ms=100, linger_ms=5,
                                    request_timeout_ms=400)
        await producer.start()
        try:
            deadline = time.monotonic() + 30
            while True:
                try:  # `send` waits for the topic's partitions at most the request timeout, and the
                    # batch's delivery too: under load the new replica may start later than that
                    # (the leader then answers NOT_LEADER_OR_FOLLOWER), a failure the caller retries.
                    return (await producer.send_and_wait(topic, b"text", partition=0)).offset
                except (UnknownTopicOrPartitionError, KafkaTimeoutError, RequestTimedOutError,
                        NotLeaderForPartitionError, LeaderNotAvailableError):
                    if time.monotonic() > deadline:
                        raise
        finally:
            await producer.stop()

    try:
        with caplog.at_level(logging.WARNING, logger="aiokafka"):
            assert asyncio.run(run()) >= 0   # (an attempt the client gave up on may have been written)
        timeouts = [r.getMessage() for r in caplog.records if "Unable to request metadata" in r.getMessage()]
        assert not timeouts, timeouts
    finally:
        delete_topics(bootstrap, topic)
