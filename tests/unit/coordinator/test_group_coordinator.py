"""GroupCoordinator, the host of the group state machine and offsets, over an in-memory
`__consumer_offsets` (its `OffsetsStorage` interface): ownership errors, loading, commits
written before they are answered, append errors mapped as Kafka maps them, a rebalance
through the timer loop, and state rebuilt from the records by a new coordinator."""
from __future__ import annotations

import asyncio
import dataclasses

import pytest

from rafka.common.errors import ErrorCode
from rafka.coordinator.group import offsets_records as records
from rafka.coordinator.group import offsets_topic as topic
from rafka.coordinator.group.group_coordinator import GroupCoordinator, GroupSettings
from rafka.coordinator.group.group_messages import CommittedOffset, JoinRequest, SyncRequest
from rafka.coordinator.group.group_metadata import GroupConfig

PARTITIONS = 4
GROUP = "g"
SETTINGS = GroupSettings(partitions=PARTITIONS, group=GroupConfig(initial_rebalance_delay_ms=0))


class MemoryOffsets:
    """`__consumer_offsets` partitions as lists of batches; `fail_with` makes appends fail."""

    def __init__(self) -> None:
        self.batches: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
        self.fail_with: ErrorCode | None = None
        self.gate: asyncio.Event | None = None
        self.warmed: list[int] = []

    def warm(self, partition: int) -> bool:
        self.warmed.append(partition)
        return True

    async def append(self, partition: int, batch: bytes) -> ErrorCode:
        if self.fail_with is not None:
            return self.fail_with
        self.batches[partition].append(batch)
        return ErrorCode.NONE

    async def read(self, partition: int):
        if self.gate is not None:
            await self.gate.wait()
        for batch in list(self.batches[partition]):
            yield batch


def run(coro):
    return asyncio.run(coro)


async def loaded(storage: MemoryOffsets) -> GroupCoordinator:
    coordinator = GroupCoordinator(1, SETTINGS, storage)
    coordinator.start()
    coordinator.set_led_partitions(set(range(PARTITIONS)))
    for _ in range(100):
        if coordinator.check(GROUP) is ErrorCode.NONE:
            break
        await asyncio.sleep(0.01)
    return coordinator


def join(member_id: str = "") -> JoinRequest:
    return JoinRequest(GROUP, member_id, None, 10000, 10000, "consumer", (("range", b"meta"),), "c", "/h", 5)


def test_groups_of_partitions_not_led_here_get_not_coordinator():
    async def go():
        coordinator = GroupCoordinator(1, SETTINGS, MemoryOffsets())
        assert coordinator.check(GROUP) is ErrorCode.NOT_COORDINATOR
        assert (await coordinator.join(join())).error is ErrorCode.NOT_COORDINATOR
        assert coordinator.check("") is ErrorCode.INVALID_GROUP_ID
    run(go())


def test_a_join_wakes_the_groups_offsets_partition_before_its_first_write():
    """rafka rests idle replicas: a member's join warms the group's offsets partition, so the
    group metadata written when the rebalance completes finds the replica running."""
    async def go():
        storage = MemoryOffsets()
        coordinator = await loaded(storage)
        await coordinator.join(join())
        assert storage.warmed[0] == coordinator.partition_for(GROUP)
        await coordinator.stop()
    run(go())


def test_loading_answers_load_in_progress_and_heartbeats_blindly():
    async def go():
        storage = MemoryOffsets()
        storage.gate = asyncio.Event()
        coordinator = GroupCoordinator(1, SETTINGS, storage)
        coordinator.set_led_partitions(set(range(PARTITIONS)))
        assert coordinator.check(GROUP) is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        codes = await coordinator.commit_offsets(GROUP, "", -1, None, {("t", 0): CommittedOffset(1)})
        assert codes == {("t", 0): ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}
        storage.gate.set()
        await asyncio.sleep(0.05)
        assert coordinator.check(GROUP) is ErrorCode.NONE
    run(go())


def test_commit_is_written_before_it_is_answered_and_fetched_back():
    async def go():
        storage = MemoryOffsets()
        coordinator = await loaded(storage)
        offsets = {("t", 0): CommittedOffset(5, 2, "meta"), ("t", 1): CommittedOffset(9)}
        assert await coordinator.commit_offsets(GROUP, "", -1, None, offsets) == {
            ("t", 0): ErrorCode.NONE, ("t", 1): ErrorCode.NONE}
        written = [kv for b in storage.batches[coordinator.partition_for(GROUP)] for kv in topic.replay(b)]
        assert sorted(records.decode_key(k).partition for k, _ in written) == [0, 1]
        code, found = coordinator.fetch_offsets(GROUP, [("t", 0), ("t", 7)])
        assert code is ErrorCode.NONE and found[("t", 0)].offset == 5 and found[("t", 7)] is None
        await coordinator.stop()
    run(go())


def test_append_errors_are_mapped_and_nothing_is_cached():
    async def go():
        storage = MemoryOffsets()
        coordinator = await loaded(storage)
        for failure, expected in [(ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_COORDINATOR),
                                  (ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.COORDINATOR_NOT_AVAILABLE),
                                  (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.INVALID_COMMIT_OFFSET_SIZE),
                                  (ErrorCode.CORRUPT_MESSAGE, ErrorCode.UNKNOWN_SERVER_ERROR)]:
            storage.fail_with = failure
            codes = await coordinator.commit_offsets(GROUP, "", -1, None, {("t", 0): CommittedOffset(1)})
            assert codes == {("t", 0): expected}
        assert coordinator.fetch_offsets(GROUP, None) == (ErrorCode.NONE, {})
        too_long = CommittedOffset(1, metadata="x" * 5000)
        storage.fail_with = None
        codes = await coordinator.commit_offsets(GROUP, "", -1, None, {("t", 0): too_long})
        assert codes == {("t", 0): ErrorCode.OFFSET_METADATA_TOO_LARGE}
        await coordinator.stop()
    run(go())


def test_member_commit_needs_the_current_generation():
    async def go():
        coordinator = await loaded(MemoryOffsets())
        first = await coordinator.join(join())
        assert first.error is ErrorCode.MEMBER_ID_REQUIRED
        joined = await coordinator.join(join(first.member_id))
        assert joined.error is ErrorCode.NONE and joined.generation_id == 1 and joined.leader == first.member_id
        synced = await coordinator.sync(SyncRequest(GROUP, 1, first.member_id, None, "consumer", "range",
                                                    ((first.member_id, b"assignment"),)))
        assert synced.error is ErrorCode.NONE and synced.assignment == b"assignment"
        stale = await coordinator.commit_offsets(GROUP, first.member_id, 0, None, {("t", 0): CommittedOffset(1)})
        assert stale == {("t", 0): ErrorCode.ILLEGAL_GENERATION}
        unknown = await coordinator.commit_offsets(GROUP, "nobody", 1, None, {("t", 0): CommittedOffset(1)})
        assert unknown == {("t", 0): ErrorCode.UNKNOWN_MEMBER_ID}
        ok = await coordinator.commit_offsets(GROUP, first.member_id, 1, None, {("t", 0): CommittedOffset(1)})
        assert ok == {("t", 0): ErrorCode.NONE}
        await coordinator.stop()
    run(go())


def test_a_new_coordinator_rebuilds_group_and_offsets_from_the_records():
    async def go():
        storage = MemoryOffsets()
        first = await loaded(storage)
        member = (await first.join(join())).member_id
        await first.join(join(member))
        await first.sync(SyncRequest(GROUP, 1, member, None, "consumer", "range", ((member, b"a"),)))
        await first.commit_offsets(GROUP, member, 1, None, {("t", 3): CommittedOffset(42)})
        await first.stop()

        second = await loaded(storage)
        assert second.fetch_offsets(GROUP, [("t", 3)])[1][("t", 3)].offset == 42
        described = second.state.describe(GROUP)
        assert described.state == "Stable" and [m.member_id for m in described.members] == [member]
        second.set_led_partitions(set())  # leadership moves away: the group is forgotten here
        assert second.check(GROUP) is ErrorCode.NOT_COORDINATOR and second.offsets.groups() == set()
        await second.stop()
    run(go())


def test_deleting_a_group_writes_tombstones():
    async def go():
        storage = MemoryOffsets()
        coordinator = await loaded(storage)
        await coordinator.commit_offsets(GROUP, "", -1, None, {("t", 0): CommittedOffset(1)})
        assert await coordinator.delete_groups([GROUP]) == {GROUP: ErrorCode.NONE}
        last = list(topic.replay(storage.batches[coordinator.partition_for(GROUP)][-1]))
        assert all(value is None for _, value in last) and last
        assert coordinator.fetch_offsets(GROUP, None) == (ErrorCode.NONE, {})
        await coordinator.stop()
    run(go())


def test_unreadable_records_are_skipped_with_a_log_line_and_the_partition_still_loads(caplog):
    """Junk in `__consumer_offsets` (written before clients were refused, or by a bug) must not
    make its groups answer NOT_COORDINATOR for good: each unreadable record is skipped with a
    warning and the rest loads, as Kafka's loader skips keys it does not know."""
    from rafka.partition_worker.record_batch import Record, encode_batch

    async def go():
        storage = MemoryOffsets()
        partition = topic.partition_for(GROUP, PARTITIONS)
        commit = topic.encode_offsets_batch(topic.records_for_commit(GROUP, {("t", 0): CommittedOffset(7)}), 1)
        storage.batches[partition] += [
            commit,
            encode_batch([Record(0, 1, None, b"no key")]),
            encode_batch([Record(0, 1, b"junk-key", b"junk-value")]),
            encode_batch([Record(0, 1, records.offset_commit_key(GROUP, "t", 1), b"\x00\x03junk")]),
            encode_batch([Record(0, 1, records.group_metadata_key(GROUP), b"\x00\x03\xff")]),
            encode_batch([Record(0, 1, b"\x00", b"truncated key")]),
            topic.encode_offsets_batch(topic.records_for_commit(GROUP, {("t", 2): CommittedOffset(9)}), 1),
        ]
        coordinator = await loaded(storage)
        assert coordinator.check(GROUP) is ErrorCode.NONE
        code, found = coordinator.fetch_offsets(GROUP, [("t", 0), ("t", 1), ("t", 2)])
        assert code is ErrorCode.NONE
        assert {tp: o.offset if o else None for tp, o in found.items()} == {("t", 0): 7, ("t", 1): None, ("t", 2): 9}
        await coordinator.stop()

    with caplog.at_level("WARNING"):
        run(go())
    skipped = [r.getMessage() for r in caplog.records if "skipped an unreadable record" in r.getMessage()]
    assert len(skipped) == 4, skipped
    assert not [r for r in caplog.records if "failed to load" in r.getMessage()]


class RaisingOffsets(MemoryOffsets):
    """A partition whose replica is gone: the append raises instead of answering."""

    def __init__(self) -> None:
        super().__init__()
        self.raise_on_append = False

    async def append(self, partition: int, batch: bytes) -> ErrorCode:
        if self.raise_on_append:
            raise ConnectionError("replica data connection lost")
        return await super().append(partition, batch)


@pytest.mark.parametrize("failure, expected", [
    (ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.COORDINATOR_NOT_AVAILABLE),
    (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_COORDINATOR),
    (ErrorCode.REQUEST_TIMED_OUT, ErrorCode.REBALANCE_IN_PROGRESS),
    (ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.NOT_COORDINATOR),   # its __consumer_offsets dir is full
    (ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.UNKNOWN_SERVER_ERROR),
    ("raises", ErrorCode.UNKNOWN_SERVER_ERROR)])
def test_a_failed_write_of_the_leaders_assignment_is_not_answered_as_success(failure, expected):
    """Kafka's storeGroup callback: when the leader's assignment cannot be written, SyncGroup is
    answered with the (mapped) error, the assignment is forgotten and the group rebalances; a
    successful write later completes the next generation as usual."""
    async def go():
        storage = RaisingOffsets()
        coordinator = await loaded(storage)
        member = (await coordinator.join(join())).member_id
        assert (await coordinator.join(join(member))).error is ErrorCode.NONE
        if failure == "raises":
            storage.raise_on_append = True
        else:
            storage.fail_with = failure
        synced = await coordinator.sync(SyncRequest(GROUP, 1, member, None, "consumer", "range",
                                                    ((member, b"assignment"),)))
        assert synced.error is expected and synced.assignment == b""
        described = coordinator.state.describe(GROUP)
        assert described.state == "PreparingRebalance"
        assert [m.assignment for m in described.members] == [b""]
        assert coordinator.offsets.group_snapshot(GROUP) is None  # nothing cached as stored
        storage.fail_with, storage.raise_on_append = None, False
        rejoined = await coordinator.join(join(member))
        assert rejoined.error is ErrorCode.NONE and rejoined.generation_id == 2
        synced = await coordinator.sync(SyncRequest(GROUP, 2, member, None, "consumer", "range",
                                                    ((member, b"again"),)))
        assert synced.error is ErrorCode.NONE and synced.assignment == b"again"
        assert coordinator.state.describe(GROUP).state == "Stable"
        await coordinator.stop()
    run(asyncio.wait_for(go(), 20))


class NotYetLeader(MemoryOffsets):
    """A replica that answers NOT_LEADER_OR_FOLLOWER to the first `failures` reads (a front end
    told of its leadership before the replica took it, as after a restart)."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures

    async def read(self, partition: int):
        if self.failures > 0:
            self.failures -= 1
            raise RuntimeError(f"reading __consumer_offsets-{partition} at 0: NOT_LEADER_OR_FOLLOWER")
        async for batch in super().read(partition):
            yield batch


def test_a_failed_load_is_retried_while_the_partition_is_led_here():
    async def go():
        storage = NotYetLeader(failures=3)
        partition = topic.partition_for(GROUP, PARTITIONS)
        storage.batches[partition].append(
            topic.encode_offsets_batch(topic.records_for_commit(GROUP, {("t", 0): CommittedOffset(5)}), 1))
        coordinator = GroupCoordinator(1, dataclasses.replace(SETTINGS, load_retry_backoff_ms=10), storage)
        coordinator.start()
        coordinator.set_led_partitions({partition})
        assert coordinator.check(GROUP) is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        for _ in range(200):
            if coordinator.check(GROUP) is ErrorCode.NONE:
                break
            assert coordinator.check(GROUP) is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS  # never NOT_COORDINATOR
            await asyncio.sleep(0.01)
        assert coordinator.fetch_offsets(GROUP, [("t", 0)])[1][("t", 0)].offset == 5
        # Leadership moving away stops the retries.
        failing = NotYetLeader(failures=10**6)
        other = GroupCoordinator(1, dataclasses.replace(SETTINGS, load_retry_backoff_ms=10), failing)
        other.set_led_partitions({partition})
        await asyncio.sleep(0.05)
        other.set_led_partitions(set())
        assert other.check(GROUP) is ErrorCode.NOT_COORDINATOR
        await coordinator.stop()
        await other.stop()
    run(asyncio.wait_for(go(), 20))


class GatedOffsets(MemoryOffsets):
    """Appends wait for `write_gate` once it is set (a write to `__consumer_offsets` under way)."""

    def __init__(self) -> None:
        super().__init__()
        self.write_gate: asyncio.Event | None = None
        self.writing = asyncio.Event()

    async def append(self, partition: int, batch: bytes) -> ErrorCode:
        if self.write_gate is not None:
            self.writing.set()
            await self.write_gate.wait()
        return await super().append(partition, batch)


@pytest.mark.parametrize("write_fails", [False, True])
def test_a_follower_syncing_while_the_leaders_assignment_is_written_gets_it_only_once_written(write_fails):
    """Kafka keeps the group CompletingRebalance until storeGroup's callback: a follower's
    SyncGroup that arrives while the leader's assignment is being written is answered after the
    write, with its assignment, or with the write's error when it fails; never before."""
    async def go():
        storage = GatedOffsets()
        coordinator = await loaded(storage)
        leader = (await coordinator.join(join())).member_id
        assert (await coordinator.join(join(leader))).error is ErrorCode.NONE
        second = asyncio.ensure_future(coordinator.join(join()))         # a second member: a rebalance
        follower = None
        for _ in range(200):                                             # its first join answers MEMBER_ID_REQUIRED
            if second.done():
                follower = second.result().member_id
                break
            await asyncio.sleep(0.01)
        joined = [asyncio.ensure_future(coordinator.join(join(follower))),
                  asyncio.ensure_future(coordinator.join(join(leader)))]
        generation = (await asyncio.wait_for(joined[1], 10)).generation_id
        storage.write_gate = asyncio.Event()
        if write_fails:
            storage.fail_with = ErrorCode.NOT_LEADER_OR_FOLLOWER
        leader_sync = asyncio.ensure_future(coordinator.sync(SyncRequest(
            GROUP, generation, leader, None, "consumer", "range", ((leader, b"L"), (follower, b"F")))))
        await asyncio.wait_for(storage.writing.wait(), 10)
        follower_sync = asyncio.ensure_future(coordinator.sync(SyncRequest(
            GROUP, generation, follower, None, "consumer", "range", ())))
        await asyncio.sleep(0.05)                                        # (it would be answered by now)
        assert not follower_sync.done() and not leader_sync.done()
        storage.write_gate.set()
        answers = await asyncio.wait_for(asyncio.gather(leader_sync, follower_sync), 10)
        if write_fails:
            assert [a.assignment for a in answers] == [b"", b""]
            assert all(a.error is not ErrorCode.NONE for a in answers)
        else:
            assert [(a.error, a.assignment) for a in answers] == [(ErrorCode.NONE, b"L"), (ErrorCode.NONE, b"F")]
        await coordinator.stop()
    run(asyncio.wait_for(go(), 30))


def test_a_timer_tick_whose_write_hangs_does_not_hold_other_groups_joins():
    """Group a's member expires and the group's new metadata is written to a slow (say, waking)
    offsets partition; meanwhile group b's rebalance reaches its rebalance timeout: its join is
    answered then, not after a's write (franz-go's members gave up on joins held so)."""
    settings = GroupSettings(partitions=PARTITIONS, group=GroupConfig(initial_rebalance_delay_ms=0,
                                                                       min_session_timeout_ms=100))

    def joining(group: str, member: str, session_ms: int, rebalance_ms: int) -> JoinRequest:
        return JoinRequest(group, member, None, session_ms, rebalance_ms, "consumer", (("range", b"m"),), "c", "/h", 5)

    async def member(coordinator: GroupCoordinator, group: str, session_ms: int, rebalance_ms: int) -> str:
        member_id = (await coordinator.join(joining(group, "", session_ms, rebalance_ms))).member_id
        joined = await coordinator.join(joining(group, member_id, session_ms, rebalance_ms))
        synced = await coordinator.sync(SyncRequest(group, joined.generation_id, member_id, None, "consumer",
                                                    "range", ((member_id, b"x"),)))
        assert synced.error is ErrorCode.NONE
        return member_id

    async def go():
        storage = GatedOffsets()
        coordinator = GroupCoordinator(1, settings, storage)
        coordinator.start()
        coordinator.set_led_partitions(set(range(PARTITIONS)))
        while coordinator.check("b") is not ErrorCode.NONE or coordinator.check("a") is not ErrorCode.NONE:
            await asyncio.sleep(0.01)
        await member(coordinator, "b", 30_000, 400)      # b's first member: it will not rejoin
        await member(coordinator, "a", 200, 400)         # a's member: it stops heartbeating now
        storage.write_gate = asyncio.Event()             # writes hang from here on
        await asyncio.wait_for(storage.writing.wait(), 10)   # a's member expired: its group's write hangs
        second = (await coordinator.join(joining("b", "", 30_000, 400))).member_id
        answer = await asyncio.wait_for(coordinator.join(joining("b", second, 30_000, 400)), 5)
        assert answer.error is ErrorCode.NONE and answer.member_id == second
        assert not storage.write_gate.is_set()
        storage.write_gate.set()
        await coordinator.stop()
    run(asyncio.wait_for(go(), 30))
