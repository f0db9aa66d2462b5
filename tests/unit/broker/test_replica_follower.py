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
    """Replicas of broker 1 and 2, each with a channel to its data socket."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.replicas = {b: PartitionReplica(b, TP, str(root / f"b{b}"), CONFIG, str(root / f"{b}.sock"))
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


def run(short_dir, scenario) -> None:
    async def main() -> None:
        pair = await Pair(short_dir).start()
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
