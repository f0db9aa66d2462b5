"""Offset commits that the group refuses, and real clients recovering from them.

The broker's side, byte for byte over a raw socket: a commit from an unknown member gets
UNKNOWN_MEMBER_ID, one with a stale generation ILLEGAL_GENERATION, one between JoinGroup and
SyncGroup REBALANCE_IN_PROGRESS, and one from a replaced static member FENCED_INSTANCE_ID.

The clients' side, with kafka-python, confluent-kafka and aiokafka members in their own
processes (tests/interop/group_member.py): a member frozen past its session timeout is
removed; when it wakes its stale commits and heartbeats are refused, it rejoins, the load
spreads again and no record is lost. A static member replaced by a new instance with the same
group.instance.id is fenced (the client reports it as fatal) and the new instance resumes
from the last committed offsets.
"""
from __future__ import annotations

import os
import signal
import uuid

import pytest

from rafka.net.client import KafkaConnection
from tests.interop.clients import create_topic
from tests.interop.test_consumer_groups import Member
from tests.waiting import wait_until

OFFSET_COMMIT, JOIN_GROUP, SYNC_GROUP, FIND_COORDINATOR = 8, 11, 14, 10
UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS, MEMBER_ID_REQUIRED, FENCED_INSTANCE_ID = 25, 22, 27, 79, 82
PARTITIONS = 2


# -- the broker's answers ---------------------------------------------------------------------
def join_body(group: str, member_id: str, instance_id: str | None = None) -> dict:
    return {"group_id": group, "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000, "member_id": member_id,
            "group_instance_id": instance_id, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b"\x00\x01"}]}


def join(conn: KafkaConnection, group: str, member_id: str = "", instance_id: str | None = None) -> dict:
    """JoinGroup v5, answering MEMBER_ID_REQUIRED with the member id the broker gave."""
    answer = conn.request(JOIN_GROUP, 5, join_body(group, member_id, instance_id))
    if answer["error_code"] == MEMBER_ID_REQUIRED:
        answer = conn.request(JOIN_GROUP, 5, join_body(group, answer["member_id"], instance_id))
    assert answer["error_code"] == 0, answer
    return answer


def sync(conn: KafkaConnection, group: str, joined: dict, instance_id: str | None = None) -> None:
    assignments = [{"member_id": m["member_id"], "assignment": b""} for m in joined["members"]]
    answer = conn.request(SYNC_GROUP, 3, {"group_id": group, "generation_id": joined["generation_id"],
                                          "member_id": joined["member_id"], "group_instance_id": instance_id,
                                          "assignments": assignments})
    assert answer["error_code"] == 0, answer


def commit(conn: KafkaConnection, group: str, topic: str, generation: int, member_id: str,
           instance_id: str | None = None) -> int:
    """OffsetCommit v7 of offset 1 for partition 0; returns its error code."""
    answer = conn.request(OFFSET_COMMIT, 7, {
        "group_id": group, "generation_id_or_member_epoch": generation, "member_id": member_id,
        "group_instance_id": instance_id,
        "topics": [{"name": topic, "partitions": [{"partition_index": 0, "committed_offset": 1,
                                                    "committed_leader_epoch": -1, "committed_metadata": ""}]}]})
    return answer["topics"][0]["partitions"][0]["error_code"]


def test_refused_commits_get_kafkas_error_codes(bootstrap):
    topic = f"commit-errors-{uuid.uuid4().hex[:6]}"
    create_topic(bootstrap, topic, 1)
    group = f"raw-{uuid.uuid4().hex[:6]}"
    with KafkaConnection.to(bootstrap) as conn, KafkaConnection.to(bootstrap) as other:
        found = conn.request(FIND_COORDINATOR, 3, {"key": group, "key_type": 0})
        assert found["error_code"] == 0, found
        first = join(conn, group)
        sync(conn, group, first)
        generation, member = first["generation_id"], first["member_id"]
        assert commit(conn, group, topic, generation, member) == 0
        assert commit(conn, group, topic, generation, "not-a-member") == UNKNOWN_MEMBER_ID
        assert commit(conn, group, topic, generation - 1, member) == ILLEGAL_GENERATION

        # A second member joins; once the first rejoins, both hold generation+1 but have not
        # synced: a commit now is REBALANCE_IN_PROGRESS, and is accepted after SyncGroup.
        pending = other.request(JOIN_GROUP, 5, join_body(group, ""))
        assert pending["error_code"] == MEMBER_ID_REQUIRED
        other.send(JOIN_GROUP, 5, join_body(group, pending["member_id"]))
        rejoined = join(conn, group, member)
        _, second = other.receive()
        assert second["error_code"] == 0 and rejoined["generation_id"] == generation + 1
        assert commit(conn, group, topic, rejoined["generation_id"], member) == REBALANCE_IN_PROGRESS
        other.send(SYNC_GROUP, 3, {"group_id": group, "generation_id": second["generation_id"],
                                   "member_id": second["member_id"], "group_instance_id": None, "assignments": []})
        sync(conn, group, rejoined)
        assert other.receive()[1]["error_code"] == 0
        assert commit(conn, group, topic, rejoined["generation_id"], member) == 0

    static_group = f"raw-static-{uuid.uuid4().hex[:6]}"
    with KafkaConnection.to(bootstrap) as conn:
        old = join(conn, static_group, instance_id="instance-1")
        sync(conn, static_group, old, "instance-1")
        assert commit(conn, static_group, topic, old["generation_id"], old["member_id"], "instance-1") == 0
        new = join(conn, static_group, instance_id="instance-1")  # the same instance starts again
        assert new["member_id"] != old["member_id"]
        assert commit(conn, static_group, topic, old["generation_id"], old["member_id"],
                      "instance-1") == FENCED_INSTANCE_ID
        assert commit(conn, static_group, topic, new["generation_id"], new["member_id"], "instance-1") == 0


# -- real clients recovering --------------------------------------------------------------------
def produce(bootstrap: str, topic: str, values: range) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in values:
        producer.produce(topic, b"v-%d" % i, partition=i % PARTITIONS)
    assert producer.flush(30) == 0


def values_of(*members: Member) -> set[str]:
    return {value for member in members for _, _, value in list(member.records)}


def committed_offsets(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    from confluent_kafka import Consumer, TopicPartition

    probe = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        found = probe.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=30)
    finally:
        probe.close()
    return {tp.partition: tp.offset for tp in found}


@pytest.mark.parametrize("client", ["kafka-python", "confluent-kafka", "aiokafka"])
def test_member_frozen_past_its_session_rejoins_and_loses_nothing(bootstrap, client):
    topic, group = f"frozen-{client}-{uuid.uuid4().hex[:6]}", f"frozen-{uuid.uuid4().hex[:6]}"
    create_topic(bootstrap, topic, PARTITIONS)
    produce(bootstrap, topic, range(0, 300))
    first = Member(client, bootstrap, topic, group)
    second = None
    try:
        wait_until(lambda: len(values_of(first)) == 300, timeout_s=60, message="the first member consumed 300")
        os.kill(first.proc.pid, signal.SIGSTOP)  # no heartbeats, no polls: the group drops it
        produce(bootstrap, topic, range(300, 400))
        second = Member(client, bootstrap, topic, group)
        wait_until(lambda: second.assignment == list(range(PARTITIONS)), timeout_s=60,
                   message="the second member owns every partition")
        wait_until(lambda: len(values_of(second) & {f"v-{i}" for i in range(300, 400)}) == 100, timeout_s=60,
                   message="the second member consumed what the frozen one missed")
        rebalances_before = len(first.assignments)
        os.kill(first.proc.pid, signal.SIGCONT)
        # It finds out it was removed (refused heartbeat or commit), rejoins, and the load spreads.
        wait_until(lambda: len(first.assignments) > rebalances_before and first.assignment
                   and second.assignment and len(second.assignment) == 1, timeout_s=60,
                   message="the woken member rejoined and the partitions are split again")
        produce(bootstrap, topic, range(400, 500))
        wait_until(lambda: values_of(first, second) >= {f"v-{i}" for i in range(500)}, timeout_s=60,
                   message="every record consumed at least once")
        allowed = {"CommitFailedError", "RebalanceInProgressError", "UnknownMemberIdError", "IllegalGenerationError",
                   "IllegalStateError", "UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION", "REBALANCE_IN_PROGRESS",
                   "_STATE", "_ASSIGNMENT_LOST", "_NO_OFFSET"}
        with first._lock:
            failures = [line for line in first.events if line.get("event") == "commit_failed"]
        assert {f["error"] for f in failures} <= allowed, failures
        wait_until(lambda: committed_offsets(bootstrap, group, topic) == {p: 250 for p in range(PARTITIONS)},
                   timeout_s=30, message="the group's commits reached the log end")
        first.leave()
        second.leave()
    finally:
        for member in (first, second):
            if member is not None and member.proc.poll() is None:
                os.kill(member.proc.pid, signal.SIGCONT)
                member.kill()


@pytest.mark.parametrize("client", ["kafka-python", "confluent-kafka"])
def test_replaced_static_member_is_fenced_and_the_new_instance_resumes(bootstrap, client):
    topic, group = f"static-{client}-{uuid.uuid4().hex[:6]}", f"static-{uuid.uuid4().hex[:6]}"
    create_topic(bootstrap, topic, PARTITIONS)
    produce(bootstrap, topic, range(0, 200))
    old = Member(client, bootstrap, topic, group, instance_id="static-1")
    new = None
    try:
        wait_until(lambda: len(values_of(old)) == 200, timeout_s=60, message="the static member consumed 200")
        wait_until(lambda: committed_offsets(bootstrap, group, topic) == {p: 100 for p in range(PARTITIONS)},
                   timeout_s=30, message="its commits are in")
        new = Member(client, bootstrap, topic, group, instance_id="static-1")
        wait_until(lambda: new.assignment == list(range(PARTITIONS)), timeout_s=60,
                   message="the new instance took the static member's place")
        # The old instance learns it was fenced from a refused heartbeat (librdkafka) or from its
        # next refused commit (kafka-python, once new records reach it); either way it stops.
        produce(bootstrap, topic, range(200, 300))
        assert old.proc.wait(60) == 3, "the replaced member did not stop on FENCED_INSTANCE_ID"
        with old._lock:
            fatal = [e for e in old.events if e.get("event") == "fatal"]
        assert fatal and "FENCED" in fatal[0]["error"].upper(), old.events[-3:]
        wait_until(lambda: values_of(new) >= {f"v-{i}" for i in range(200, 300)}, timeout_s=60,
                   message="the new instance consumed what came after")
        resumed_at = min(offset for _, offset, _ in new.records)
        assert resumed_at == 100, f"the new instance started at offset {resumed_at}, not after the last commit"
        new.leave()
    finally:
        for member in (old, new):
            if member is not None and member.proc.poll() is None:
                member.kill()
