"""A leader replica whose log dir is a small filesystem that fills (no Ray): the produce that
hits the full disk, and every one after it, is answered KAFKA_STORAGE_ERROR at once over the
data socket; the replica tells its broker once that its log dir failed; fetches of every
acknowledged record go on; and a replica the broker marks offline (its dir failed under
another log) refuses writes the same way."""
from __future__ import annotations

import asyncio
import time
import uuid

from rafka.common.config import LogConfig
from rafka.common.errors import ErrorCode
from rafka.common.metadata import BrokerInfo, ClusterMetadata, PartitionInfo, TopicInfo
from rafka.common.types import TopicPartition
from rafka.coordinator.broker.log_dir_failure import FailedLogDirs, replicas_to_report
from rafka.net.data_plane import ReplicaChannel
from rafka.partition_worker.record_batch import Record, encode_batch, iter_batches
from rafka.partition_worker.replica_actor import PartitionReplica
from rafka.partition_worker.replica_state import LeaderAndIsr
from tests.small_fs import small_filesystem
from tests.unit.broker.test_replica_follower import read_region

CONFIG = LogConfig(segment_bytes=256 * 1024, retention_ms=-1, retention_bytes=-1)
TP = TopicPartition("full", 0)


class FakeCoordinator:
    """The broker's coordinator as the replica calls it: `log_dir_failed.remote(dir, reason)`."""

    def __init__(self) -> None:
        self.failures: list[tuple[str, str]] = []
        self.log_dir_failed = self

    async def remote(self, log_dir: str, reason: str) -> None:
        self.failures.append((log_dir, reason))


def batch(i: int) -> bytes:
    return encode_batch([Record(0, 1_700_000_000_000 + i, f"k{i}".encode(), b"v" * 2000)])


async def read_all(channel: ReplicaChannel, end: int) -> list[int]:
    offsets, offset = [], 0
    while offset < end:
        result = await channel.read(offset, 1 << 20)
        assert result.error is ErrorCode.NONE and result.regions, result
        for region in result.regions:
            offsets += [h.base_offset for h in iter_batches(read_region(region))]
        offset = result.next_offset
    return offsets


def test_produce_to_a_full_log_dir_is_answered_kafka_storage_error_and_reads_go_on(short_dir):
    coordinator = FakeCoordinator()

    async def main() -> None:
        with small_filesystem(short_dir / "small", 1 << 20) as log_dir:
            replica = PartitionReplica(1, TP, str(log_dir), CONFIG, str(short_dir / "r.sock"),
                                       coordinator=coordinator)
            assert replica.become(LeaderAndIsr(1, 0, (1,), (1,), 1)) is ErrorCode.NONE
            await replica.ready()
            channel = ReplicaChannel(None, str(short_dir / "r.sock"))
            try:
                acknowledged = []
                for i in range(2000):
                    result = await channel.append(batch(i), 1)
                    if result.error is not ErrorCode.NONE:
                        break
                    acknowledged.append(result.base_offset)
                assert result.error is ErrorCode.KAFKA_STORAGE_ERROR, result
                assert "No space left on device" in result.error_message
                assert 200 < len(acknowledged) < 600
                started = time.monotonic()
                again = await channel.append(batch(0), -1, 30_000)   # acks=all too: at once, not on a timeout
                assert again.error is ErrorCode.KAFKA_STORAGE_ERROR and time.monotonic() - started < 1
                assert await read_all(channel, len(acknowledged)) == acknowledged
                for _ in range(200):   # the report runs as a task of the replica's loop
                    if coordinator.failures:
                        break
                    await asyncio.sleep(0.01)
                assert [d for d, _ in coordinator.failures] == [str(log_dir)]
                assert "ENOSPC" in coordinator.failures[0][1]
            finally:
                channel.close()
                replica.close()
    asyncio.run(main())


def test_a_replica_whose_dir_failed_under_another_log_refuses_writes(short_dir):
    async def main() -> None:
        replica = PartitionReplica(1, TP, str(short_dir / "logs"), CONFIG, str(short_dir / "r.sock"))
        assert replica.become(LeaderAndIsr(1, 0, (1,), (1,), 1)) is ErrorCode.NONE
        await replica.ready()
        channel = ReplicaChannel(None, str(short_dir / "r.sock"))
        try:
            assert (await channel.append(batch(0), 1)).error is ErrorCode.NONE
            replica.mark_log_dir_offline("log dir failed: ENOSPC under full-1")
            refused = await channel.append(batch(1), 1)
            assert refused.error is ErrorCode.KAFKA_STORAGE_ERROR and "full-1" in refused.error_message
            assert (await replica.delete_records(1)).error is ErrorCode.KAFKA_STORAGE_ERROR
            assert await read_all(channel, 1) == [0]
        finally:
            channel.close()
            replica.close()
    asyncio.run(main())


def metadata(isr: tuple[int, ...], brokers: tuple[int, ...] = (1, 2, 3)) -> ClusterMetadata:
    partitions = {0: PartitionInfo(0, leader=isr[0], leader_epoch=1, replicas=(1, 2, 3), isr=isr)}
    return ClusterMetadata(brokers={b: BrokerInfo(b, "127.0.0.1", 9092 + b) for b in brokers},
                           topics={"t": TopicInfo("t", uuid.uuid4(), partitions)}, controller_id=1, controller_epoch=1)


def test_a_replica_on_a_failed_dir_is_reported_only_where_another_in_sync_replica_can_lead():
    tp = TopicPartition("t", 0)
    assert replicas_to_report(metadata((1, 2, 3)), 1, {tp}) == {tp}      # leadership moves to 2
    assert replicas_to_report(metadata((2, 1)), 1, {tp}) == {tp}         # a follower leaves the ISR
    assert replicas_to_report(metadata((1,)), 1, {tp}) == set()          # the only one: stays, read-only
    assert replicas_to_report(metadata((1, 2), brokers=(1, 3)), 1, {tp}) == set()   # 2 is dead
    assert replicas_to_report(metadata((1, 2)), 1, {TopicPartition("gone", 0)}) == set()
    dirs = FailedLogDirs()
    assert dirs.fail("/a", "ENOSPC") and not dirs.fail("/a", "again") and "/a" in dirs
    assert dirs.replicas_on_failed_dirs({tp: "/a", TopicPartition("t", 1): "/b"}) == {tp}
