"""A leader and a follower replica, each on its Unix socket (no Ray), with this test playing
the fetcher between them: the follower's log becomes byte-identical to the leader's, an
acks=all produce completes as the follower catches up, and a follower with a divergent tail
from an old leader epoch truncates it away (OffsetForLeaderEpoch) before fetching."""
from __future__ import annotations

import asyncio
import os
from pathlib import Path

from rafka.common.errors import ErrorCode
from rafka.common.types import TopicPartition
from rafka.net.data_plane import ReplicaChannel
from rafka.partition_worker.replica_actor import PartitionReplica
from rafka.partition_worker.replica_state import LeaderAndIsr
from tests.unit.broker.test_replica_channel import CONFIG, batch

A, B = 1, 2
TP = TopicPartition("t", 0)


class Pair:
    """Replicas of broker 1 and 2 (of `tp`), each with a channel to its data socket."""

    def __init__(self, root: Path, tp: TopicPartition = TP) -> None:
        self.root = root
        self.replicas = {b: PartitionReplica(b, tp, str(root / f"b{b}"), CONFIG, str(root / f"{b}.sock"))
                         for b in (A, B)}
        self.channels: dict[int, ReplicaChannel] = {}

    async def start(self) -> "Pair":
        for b, replica in self.replicas.items():
            await replica.ready()
            self.channels[b] = ReplicaChannel(None, str(self.root / f"{b}.sock"))
        return self

    def lead(self, leader: int, epoch: int, isr: tuple[int, ...] = (A, B)) -> None:
        for replica in self.replicas.values():
            assert replica.become(LeaderAndIsr(leader, epoch, isr, (A, B), 1)) is ErrorCode.NONE

    async def fetch_once(self, leader: int, follower: int, epoch: int) -> int:
        """One fetcher round: the follower's fetch at its log end, then its append; the bytes moved."""
        offset = self.replicas[follower].status().log_end_offset
        answer = await self.channels[leader].replica_read(follower, epoch, offset, 1 << 20)
        assert answer.error is ErrorCode.NONE, answer
        data = b"".join(read_region(r) for r in answer.regions)
        result = await self.channels[follower].follower_append(data, answer.high_watermark, answer.log_start_offset)
        assert result.error is ErrorCode.NONE, result
        return len(data)

    def close(self) -> None:
        for channel in self.channels.values():
            channel.close()
        for replica in self.replicas.values():
            replica.close()


def read_region(region) -> bytes:
    fd = os.open(region.path, os.O_RDONLY)
    try:
        return os.pread(fd, region.length, region.position)
    finally:
        os.close(fd)


def log_bytes(root: Path, broker: int) -> bytes:
    return b"".join(p.read_bytes() for p in sorted((root / f"b{broker}" / str(TP)).glob("*.log")))


def run(short_dir, scenario, tp: TopicPartition = TP) -> None:
    async def main() -> None:
        pair = await Pair(short_dir, tp).start()
        try:
            await scenario(pair)
        finally:
            pair.close()
    asyncio.run(main())


def test_acks_all_completes_as_the_follower_catches_up_and_logs_are_identical(short_dir):
    async def scenario(pair: Pair) -> None:
        pair.lead(A, 1)
        produces = [asyncio.ensure_future(pair.channels[A].append(batch(), -1, 10_000)) for _ in range(5)]
        await asyncio.sleep(0)
        for _ in range(20):
            if all(p.done() for p in produces):
                break
            await pair.fetch_once(A, B, 1)
        results = [await p for p in produces]
        assert [r.error for r in results] == [ErrorCode.NONE] * 5
        assert [r.base_offset for r in results] == [0, 3, 6, 9, 12]
        await pair.fetch_once(A, B, 1)                 # the follower learns the high watermark
        leader, follower = pair.replicas[A].status(), pair.replicas[B].status()
        assert follower.log_end_offset == leader.log_end_offset == 15
        assert follower.high_watermark == leader.high_watermark == 15
        assert log_bytes(short_dir, B) == log_bytes(short_dir, A)
    run(short_dir, scenario)


def test_a_divergent_tail_from_an_old_epoch_is_truncated_before_fetching(short_dir):
    async def scenario(pair: Pair) -> None:
        pair.lead(A, 1)
        assert (await pair.channels[A].append(batch(), 1)).base_offset == 0
        await pair.fetch_once(A, B, 1)                 # both hold offsets 0-2 of epoch 1
        pair.lead(B, 2, isr=(B,))                      # B leads alone at epoch 2 and writes 3-5...
        assert (await pair.channels[B].append(batch(5), 1)).base_offset == 3
        pair.lead(A, 3, isr=(A,))                      # ...which A never saw: A leads again, writes 3-5
        assert (await pair.channels[A].append(batch(), 1)).base_offset == 3
        assert log_bytes(short_dir, B) != log_bytes(short_dir, A)

        code, epoch, end = pair.replicas[A].offset_for_leader_epoch(3, pair.replicas[B].latest_leader_epoch())
        assert (code, epoch, end) == (ErrorCode.NONE, 1, 3)   # epoch 2 is unknown to A: agree up to 3
        assert pair.replicas[B].truncate_to(end) == 3
        while await pair.fetch_once(A, B, 3):
            pass
        assert pair.replicas[B].status().log_end_offset == 6
        assert log_bytes(short_dir, B) == log_bytes(short_dir, A)
    run(short_dir, scenario)


def test_follower_appends_are_refused_by_a_leader_a_leaderless_replica_and_off_the_log_end(short_dir):
    async def scenario(pair: Pair) -> None:
        assert (await pair.channels[B].follower_append(b"", 0, 0)).error is ErrorCode.NOT_LEADER_OR_FOLLOWER
        pair.lead(A, 1)
        assert (await pair.channels[A].follower_append(b"", 0, 0)).error is ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert (await pair.channels[B].follower_append(batch(), 0, 0)).log_end_offset == 3
        again = await pair.channels[B].follower_append(batch(), 0, 0)   # offsets 0-2 again: not at the log end
        assert again.error is not ErrorCode.NONE and again.log_end_offset == 3
    run(short_dir, scenario)


def test_a_new_leader_reads_its_own_log_end_past_the_high_watermark_it_was_told_as_a_follower(short_dir):
    """A follower's high watermark is what the leader last told it, one fetch behind: after a
    failover the new leader's high watermark lags its log end until its followers fetch.
    Consumers read up to the high watermark; the broker's own read (the group coordinator
    loading __consumer_offsets, Kafka's FetchIsolation.LOG_END) reads up to the log end."""
    async def scenario(pair: Pair) -> None:
        pair.lead(A, 1)
        assert (await pair.channels[A].append(batch(), 1)).base_offset == 0
        await pair.fetch_once(A, B, 1)                 # B holds 0-2, told high watermark 0
        pair.lead(B, 2)                                # A is gone; B leads, A still in its ISR
        consumer = await pair.channels[B].read(0, 1 << 20)
        assert (consumer.error, consumer.high_watermark, consumer.regions) == (ErrorCode.NONE, 0, ())
        own = await pair.channels[B].read_log_end(0, 1 << 20)
        assert (own.error, own.high_watermark, own.next_offset, own.committed_end) == (ErrorCode.NONE, 0, 3, -1)
        assert b"".join(read_region(r) for r in own.regions) == log_bytes(short_dir, B)
        assert (await pair.channels[B].read_log_end(3, 1 << 20)).regions == ()   # at the log end: nothing
        assert (await pair.channels[A].read_log_end(0, 1 << 20)).error is ErrorCode.NOT_LEADER_OR_FOLLOWER
    run(short_dir, scenario)


def test_a_new_group_coordinator_loads_the_offsets_its_replica_holds_past_the_high_watermark(short_dir):
    """The front end of a broker that comes to lead __consumer_offsets-0 loads every commit its
    replica holds, not only those below the high watermark it was told as a follower: a commit
    acknowledged by the old coordinator (acks=all: the follower had it) is never lost."""
    from rafka.common.types import OFFSETS_TOPIC
    from rafka.coordinator.group import offsets_topic as topic
    from rafka.coordinator.group.group_coordinator import GroupSettings
    from rafka.coordinator.group.group_messages import CommittedOffset
    from rafka.net.frontend_actor import Frontend

    tp = TopicPartition(OFFSETS_TOPIC, 0)

    async def scenario(pair: Pair) -> None:
        pair.lead(A, 1)
        for offset in (10, 20):   # two commits of group g on A, both fetched by B
            commit = topic.records_for_commit("g", {("orders", 0): CommittedOffset(offset)})
            assert (await pair.channels[A].append(topic.encode_offsets_batch(commit, 1_700_000_000_000), 1)).error \
                is ErrorCode.NONE
            await pair.fetch_once(A, B, 1)
        assert pair.replicas[B].status().high_watermark == 1   # told before the second commit was fetched
        pair.lead(B, 2)
        frontend = Frontend(B, "127.0.0.1", 0, None, group_settings=GroupSettings(partitions=1))
        frontend.update_leaders({tp: (None, str(short_dir / f"{B}.sock"))})   # LeaderAndIsr: B leads it
        for _ in range(200):
            if frontend.groups.check("g") is ErrorCode.NONE:
                break
            await asyncio.sleep(0.01)
        code, found = frontend.groups.fetch_offsets("g", [("orders", 0)])
        assert code is ErrorCode.NONE and found[("orders", 0)].offset == 20
        await frontend.groups.stop()
        frontend.update_leaders({})
    run(short_dir, scenario, tp)
