"""OffsetStore: replaying `__consumer_offsets`, commits and fetches, deletions, and Kafka 3.9's
offset retention rules."""
from __future__ import annotations

import struct

import pytest
from rafka.coordinator.group import offsets_topic as topic
from rafka.coordinator.group.group_messages import (
    CommittedOffset,
    GroupSnapshot,
    MemberSnapshot,
)
from rafka.coordinator.group.offset_store import OffsetStore, subscribed_topics

MINUTE = 60_000
DAY = 24 * 60 * MINUTE
RETENTION = 7 * DAY                      # offsets.retention.minutes' default, 10080
T0 = 1_700_000_000_000


def subscription(*topics: str, version: int = 1) -> bytes:
    """ConsumerProtocolSubscription: version, topics, user data (null), and for v1+ owned partitions."""
    out = struct.pack(">hi", version, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    out += struct.pack(">i", -1)
    if version >= 1:
        out += struct.pack(">i", 0)
    return out


def member(member_id: str, *topics: str) -> MemberSnapshot:
    return MemberSnapshot(member_id, None, "client", "/127.0.0.1", 300_000, 45_000, subscription(*topics), b"")


def stable(group: str, *members: MemberSnapshot, protocol_type: str = "consumer", at: int = T0) -> GroupSnapshot:
    return GroupSnapshot(group, protocol_type, 3, "range", members[0].member_id if members else None, at, members)


def empty(group: str, since: int, generation: int = 4) -> GroupSnapshot:
    return GroupSnapshot(group, "consumer", generation, None, None, since)


def committed(offset: int, at: int, expire: int = -1) -> CommittedOffset:
    return CommittedOffset(offset=offset, leader_epoch=0, metadata="", commit_timestamp_ms=at,
                           expire_timestamp_ms=expire)


def replayed(*pairs: tuple[bytes, bytes | None]) -> OffsetStore:
    store = OffsetStore()
    for key, value in pairs:
        assert store.apply(key, value)
    return store


def always(answer: bool):
    return lambda *_: answer


# -- replay ---------------------------------------------------------------------------------------

def test_replay_keeps_the_latest_commit_per_partition_and_tombstones_delete():
    store = replayed(
        *topic.records_for_commit("g1", {("t", 0): committed(5, T0), ("t", 1): committed(6, T0)}),
        *topic.records_for_commit("g1", {("t", 0): committed(9, T0 + 1)}),
        topic.offset_tombstone("g1", "t", 1),
    )
    assert store.fetch("g1") == {("t", 0): committed(9, T0 + 1)}
    assert store.groups() == {"g1"}


def test_replay_keeps_the_latest_group_metadata_and_a_group_tombstone_removes_only_it():
    g = stable("g1", member("m1", "t"))
    store = replayed(*topic.records_for_group(empty("g1", T0)), *topic.records_for_group(g),
                     *topic.records_for_commit("g1", {("t", 0): committed(5, T0)}))
    assert store.group_snapshot("g1") == g
    store.apply(*topic.group_tombstone("g1"))
    assert store.group_snapshot("g1") is None
    assert store.fetch("g1") == {("t", 0): committed(5, T0)}   # offsets have their own tombstones


def test_the_last_offset_tombstone_forgets_a_group_without_metadata():
    store = replayed(*topic.records_for_commit("g1", {("t", 0): committed(5, T0)}), topic.offset_tombstone("g1", "t", 0))
    assert store.groups() == set() and store.fetch("g1") == {}


def test_tombstones_of_unknown_keys_change_nothing():
    store = replayed(topic.offset_tombstone("nobody", "t", 0), topic.group_tombstone("nobody"))
    assert store.groups() == set()


def test_records_of_an_unknown_key_version_are_skipped():
    store = OffsetStore()
    assert store.apply(struct.pack(">hh", 3, 1) + b"g", b"\x00\x00") is False   # a KIP-848 record
    assert store.groups() == set()


def test_a_store_loads_from_a_replayed_log():
    batches = (topic.encode_offsets_batch(topic.records_for_commit("g1", {("t", 0): committed(5, T0)}), T0)
               + topic.encode_offsets_batch(topic.records_for_group(empty("g2", T0))
                                          + topic.records_for_commit("g2", {("u", 3): committed(1, T0)}), T0))
    store = OffsetStore()
    for key, value in topic.replay(batches):
        store.apply(key, value)
    assert store.fetch("g1") == {("t", 0): committed(5, T0)}
    assert store.fetch("g2") == {("u", 3): committed(1, T0)}
    assert store.group_snapshot("g2") == empty("g2", T0)


# -- commit and fetch -----------------------------------------------------------------------------

def test_commit_then_fetch_all_some_and_missing():
    store = OffsetStore()
    store.commit("g1", {("t", 0): committed(5, T0), ("t", 1): committed(6, T0)})
    store.commit("g1", {("t", 1): committed(7, T0 + 1)})
    assert store.fetch("g1", None) == {("t", 0): committed(5, T0), ("t", 1): committed(7, T0 + 1)}
    assert store.fetch("g1", [("t", 1), ("t", 9), ("other", 0)]) == {("t", 1): committed(7, T0 + 1)}
    assert store.fetch("nobody") == {} and store.fetch("nobody", [("t", 0)]) == {}
    assert store.groups() == {"g1"}


def test_fetch_returns_a_copy():
    store = OffsetStore()
    store.commit("g1", {("t", 0): committed(5, T0)})
    store.fetch("g1").clear()
    assert store.fetch("g1") == {("t", 0): committed(5, T0)}


def test_an_empty_commit_does_not_create_a_group():
    store = OffsetStore()
    store.commit("g1", {})
    assert store.groups() == set()


def test_store_group_records_the_snapshot():
    store = OffsetStore()
    store.store_group(empty("g1", T0))
    assert store.groups() == {"g1"} and store.group_snapshot("g1") == empty("g1", T0)


# -- deletion ---------------------------------------------------------------------------------------

def test_delete_group_returns_a_tombstone_per_offset_then_the_group_record():
    store = OffsetStore()
    store.store_group(empty("g1", T0))
    store.commit("g1", {("t", 0): committed(5, T0), ("u", 2): committed(6, T0)})
    assert store.delete_group("g1") == [topic.offset_tombstone("g1", "t", 0), topic.offset_tombstone("g1", "u", 2),
                                        topic.group_tombstone("g1")]
    assert store.groups() == set() and store.group_snapshot("g1") is None


def test_delete_group_without_metadata_writes_no_group_tombstone():
    store = OffsetStore()
    store.commit("g1", {("t", 0): committed(5, T0)})
    assert store.delete_group("g1") == [topic.offset_tombstone("g1", "t", 0)]
    assert store.delete_group("g1") == [] and store.delete_group("nobody") == []


def test_delete_offsets_returns_tombstones_for_the_offsets_that_existed():
    store = OffsetStore()
    store.store_group(stable("g1", member("m1", "u")))
    store.commit("g1", {("t", 0): committed(5, T0), ("t", 1): committed(6, T0), ("u", 0): committed(1, T0)})
    assert store.delete_offsets("g1", [("t", 0), ("t", 1), ("t", 7)]) == [
        topic.offset_tombstone("g1", "t", 0), topic.offset_tombstone("g1", "t", 1)]
    assert store.fetch("g1") == {("u", 0): committed(1, T0)}
    assert store.delete_offsets("nobody", [("t", 0)]) == []


def test_deleting_the_last_offsets_of_an_empty_group_kills_it():
    store = OffsetStore()
    store.store_group(empty("g1", T0))
    store.commit("g1", {("t", 0): committed(5, T0)})
    assert store.delete_offsets("g1", [("t", 0)], group_is_empty=True) == [
        topic.offset_tombstone("g1", "t", 0), topic.group_tombstone("g1")]
    assert store.groups() == set()


def test_deleting_the_last_offsets_of_a_live_group_keeps_its_metadata():
    store = OffsetStore()
    store.store_group(stable("g1", member("m1", "u")))
    store.commit("g1", {("t", 0): committed(5, T0)})
    assert store.delete_offsets("g1", [("t", 0)]) == [topic.offset_tombstone("g1", "t", 0)]
    assert store.groups() == {"g1"}


# -- expiry -----------------------------------------------------------------------------------------

def test_a_simple_consumers_offsets_expire_retention_after_their_commit():
    store = OffsetStore()
    store.commit("simple", {("t", 0): committed(5, T0), ("t", 1): committed(6, T0 + DAY)})
    assert store.expire(T0 + RETENTION - 1, RETENTION, always(True)) == []
    assert store.expire(T0 + RETENTION, RETENTION, always(True)) == [topic.offset_tombstone("simple", "t", 0)]
    assert store.fetch("simple") == {("t", 1): committed(6, T0 + DAY)}
    assert store.expire(T0 + DAY + RETENTION, RETENTION, always(True)) == [topic.offset_tombstone("simple", "t", 1)]
    assert store.groups() == set()


def test_a_group_with_members_but_no_stored_generation_keeps_its_offsets():
    store = OffsetStore()
    store.commit("joining", {("t", 0): committed(5, T0)})
    assert store.expire(T0 + 10 * RETENTION, RETENTION, always(False)) == []


def test_an_empty_groups_offsets_expire_retention_after_it_became_empty():
    store = OffsetStore()
    store.commit("g1", {("t", 0): committed(5, T0), ("t", 1): committed(6, T0 + 2 * DAY)})
    store.store_group(empty("g1", since=T0 + 3 * DAY))
    # Both commits are older than the retention, but the group emptied only 6 days ago.
    assert store.expire(T0 + 9 * DAY, RETENTION, always(True)) == []
    assert store.expire(T0 + 3 * DAY + RETENTION, RETENTION, always(True)) == [
        topic.offset_tombstone("g1", "t", 0), topic.offset_tombstone("g1", "t", 1), topic.group_tombstone("g1")]
    assert store.groups() == set()


def test_an_empty_group_without_state_timestamp_measures_from_each_commit():
    store = OffsetStore()
    store.commit("g1", {("t", 0): committed(5, T0), ("t", 1): committed(6, T0 + DAY)})
    store.store_group(empty("g1", since=-1))         # a v0/v1 group record
    assert store.expire(T0 + RETENTION, RETENTION, always(True)) == [topic.offset_tombstone("g1", "t", 0)]
    assert store.group_snapshot("g1") is not None


def test_an_explicit_expire_timestamp_overrides_the_retention():
    store = OffsetStore()
    store.commit("simple", {("t", 0): committed(5, T0, expire=T0 + MINUTE),
                            ("t", 1): committed(6, T0, expire=T0 + 30 * DAY)})
    assert store.expire(T0 + MINUTE, RETENTION, always(True)) == [topic.offset_tombstone("simple", "t", 0)]
    assert store.expire(T0 + 29 * DAY, RETENTION, always(True)) == []     # past the retention, not the expiry
    assert store.expire(T0 + 30 * DAY, RETENTION, always(True)) == [topic.offset_tombstone("simple", "t", 1)]


def test_a_stable_consumer_group_expires_only_offsets_of_topics_nobody_subscribes_to():
    store = OffsetStore()
    store.store_group(stable("g1", member("m1", "a"), member("m2", "b")))
    store.commit("g1", {("a", 0): committed(1, T0), ("b", 0): committed(2, T0), ("old", 0): committed(3, T0),
                        ("old", 1): committed(4, T0 + DAY)})
    now = T0 + RETENTION
    assert store.expire(now, RETENTION, always(False)) == []                      # state unknown: keep
    assert store.expire(now, RETENTION, always(False), is_stable=always(False)) == []  # rebalancing: keep
    assert store.expire(now, RETENTION, always(False), is_stable=always(True)) == [topic.offset_tombstone("g1", "old", 0)]
    assert set(store.fetch("g1")) == {("a", 0), ("b", 0), ("old", 1)}
    assert store.group_snapshot("g1") is not None


def test_a_stable_group_of_another_protocol_keeps_its_offsets():
    store = OffsetStore()
    store.store_group(stable("c1", member("w1", "a"), protocol_type="connect"))
    store.commit("c1", {("x", 0): committed(1, T0)})
    assert store.expire(T0 + 10 * RETENTION, RETENTION, always(False), is_stable=always(True)) == []


def test_a_stable_group_with_an_unreadable_subscription_keeps_its_offsets():
    bad = MemberSnapshot("m1", None, "c", "h", 1, 1, b"\x00", b"")
    store = OffsetStore()
    store.store_group(stable("g1", bad))
    store.commit("g1", {("x", 0): committed(1, T0)})
    assert store.expire(T0 + 10 * RETENTION, RETENTION, always(False), is_stable=always(True)) == []


def test_an_offset_being_committed_never_expires():
    store = OffsetStore()
    store.commit("simple", {("t", 0): committed(5, T0), ("t", 1): committed(6, T0)})
    pending = lambda group, tp: tp == ("t", 0)
    assert store.expire(T0 + RETENTION, RETENTION, always(True), has_pending_commit=pending) == [
        topic.offset_tombstone("simple", "t", 1)]
    assert store.fetch("simple") == {("t", 0): committed(5, T0)}


def test_an_empty_group_without_offsets_dies_at_once_and_a_live_one_does_not():
    store = OffsetStore()
    store.store_group(empty("gone", since=T0))
    store.store_group(stable("live", member("m1", "a")))
    live = {"live"}
    assert store.expire(T0, RETENTION, lambda g: g not in live) == [topic.group_tombstone("gone")]
    assert store.groups() == {"live"}


def test_expiry_decides_per_group():
    store = OffsetStore()
    store.commit("simple", {("t", 0): committed(1, T0)})
    store.commit("busy", {("t", 0): committed(1, T0)})
    store.store_group(stable("busy", member("m1", "t")))
    store.commit("idle", {("t", 0): committed(1, T0)})
    store.store_group(empty("idle", since=T0 + RETENTION))
    busy = {"busy"}
    tombstones = store.expire(T0 + RETENTION, RETENTION, lambda g: g not in busy, is_stable=lambda g: g in busy)
    assert tombstones == [topic.offset_tombstone("simple", "t", 0)]
    assert store.groups() == {"busy", "idle"}


def test_replaying_the_tombstones_of_expiry_gives_the_same_state():
    pairs = (topic.records_for_group(empty("g1", since=T0)) + topic.records_for_commit("g1", {("t", 0): committed(1, T0)})
             + topic.records_for_commit("s", {("t", 0): committed(1, T0), ("t", 1): committed(2, T0 + DAY)}))
    leader, follower = replayed(*pairs), replayed(*pairs)
    for key, value in leader.expire(T0 + RETENTION, RETENTION, always(True)):
        follower.apply(key, value)
    assert follower.groups() == leader.groups() == {"s"}
    assert follower.fetch("s") == leader.fetch("s") == {("t", 1): committed(2, T0 + DAY)}


def test_subscribed_topics_reads_every_subscription_version_prefix():
    v3 = MemberSnapshot("m2", None, "c", "h", 1, 1, subscription("c", version=3), b"")
    g = stable("g1", member("m1", "a", "b"), v3)
    assert subscribed_topics(g) == {"a", "b", "c"}
    assert subscribed_topics(stable("g1", member("m1", "a"), protocol_type="connect")) is None
    assert subscribed_topics(empty("g1", T0)) is None


# -- unloading --------------------------------------------------------------------------------------

def test_unload_partition_forgets_exactly_the_groups_of_that_partition():
    # partition_for with 50 partitions: "hello" -> 22, "spark-kafka-source-1" -> 22, "group-1" -> 49
    store = OffsetStore()
    store.commit("hello", {("t", 0): committed(1, T0)})
    store.store_group(empty("spark-kafka-source-1", T0))
    store.commit("group-1", {("t", 0): committed(1, T0)})
    assert store.unload_partition(22, 50) == ["hello", "spark-kafka-source-1"]
    assert store.groups() == {"group-1"}
    assert store.unload_partition(22, 50) == []


@pytest.mark.parametrize("partitions", [1, 3, 50])
def test_unloading_every_partition_empties_the_store(partitions):
    store = OffsetStore()
    for i in range(40):
        store.commit(f"group-{i}", {("t", 0): committed(i, T0)})
    gone = [g for p in range(partitions) for g in store.unload_partition(p, partitions)]
    assert sorted(gone) == sorted(f"group-{i}" for i in range(40)) and store.groups() == set()
