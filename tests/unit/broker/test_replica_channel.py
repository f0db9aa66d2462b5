"""The front end's data channel against a real replica serving its Unix socket (no Ray):
reads answered at once or parked, and a sequential reader served from committed windows."""
import asyncio
import shutil
from pathlib import Path


from rafka.common.config import LogConfig
from rafka.common.errors import ErrorCode
from rafka.common.types import TopicPartition
from rafka.net import data_plane
from rafka.net.data_plane import ReplicaChannel
from rafka.partition_worker.record_batch import Record, encode_batch
from rafka.partition_worker.replica_actor import PartitionReplica
from rafka.partition_worker.replica_state import LeaderAndIsr

NOW = 1_700_000_000_000
CONFIG = LogConfig(segment_bytes=1024, index_interval_bytes=128, retention_ms=-1, retention_bytes=-1,
                   file_delete_delay_ms=60_000)


def batch(n: int = 3) -> bytes:
    return encode_batch([Record(i, NOW, f"k{i}".encode(), b"v" * 40) for i in range(n)])


BATCH_BYTES = len(batch())


def run_with_replica(short_dir: Path, scenario, *, isr: tuple[int, ...] = (1,), replicas: tuple[int, ...] = (1,),
                     config: LogConfig = CONFIG) -> None:
    """Run `scenario(replica, channel)` with broker 1's replica leading at epoch 3, listening on
    its data socket (`isr` and `replicas` name its followers, if any)."""
    async def main() -> None:
        replica = PartitionReplica(1, TopicPartition("t", 0), str(short_dir / "logs"), config,
                                   str(short_dir / "r.sock"))
        assert replica.become(LeaderAndIsr(1, 3, isr, replicas, 1)) is ErrorCode.NONE
        await replica.ready()
        channel = ReplicaChannel(None, str(short_dir / "r.sock"))
        try:
            await scenario(replica, channel)
        finally:
            channel.close()
            replica.close()
    asyncio.run(main())


async def append(channel: ReplicaChannel, count: int) -> None:
    for _ in range(count):
        assert (await channel.append(batch(), 1)).error is ErrorCode.NONE


def test_a_consumer_working_through_a_backlog_is_served_from_the_committed_window(short_dir):
    async def scenario(replica, channel):
        await append(channel, 3)                              # offsets 0-8, one segment
        first = await channel.read(0, BATCH_BYTES)            # from the replica
        assert (first.next_offset, first.high_watermark) == (3, 9)
        assert first.committed_end == 3 * BATCH_BYTES
        await append(channel, 1)                              # offsets 9-11: the window does not know
        second = await channel.read(3, BATCH_BYTES)
        assert (second.next_offset, second.high_watermark) == (6, 9)  # read by the channel itself
        assert [(r.path, r.position, r.length) for r in second.regions] == \
            [(first.regions[0].path, BATCH_BYTES, BATCH_BYTES)]
        third = await channel.read(6, 1 << 20)                # the rest of the window, whole batches
        assert (third.next_offset, third.high_watermark, third.size) == (9, 9, BATCH_BYTES)
        fourth = await channel.read(9, 1 << 20)               # window used up: the replica again
        assert (fourth.next_offset, fourth.high_watermark, fourth.size) == (12, 12, BATCH_BYTES)
        assert fourth.regions[0].position == 3 * BATCH_BYTES
    run_with_replica(short_dir, scenario)


def test_a_window_gives_at_least_one_whole_batch_and_never_splits_one(short_dir):
    async def scenario(replica, channel):
        await append(channel, 3)
        await channel.read(0, BATCH_BYTES)
        small = await channel.read(3, 10)                     # smaller than a batch: still one batch
        assert (small.size, small.next_offset) == (BATCH_BYTES, 6)
        assert (await channel.read(6, 2 * BATCH_BYTES - 1)).size == BATCH_BYTES
    run_with_replica(short_dir, scenario)


def test_an_old_window_is_not_used(short_dir, monkeypatch):
    monkeypatch.setattr(data_plane, "WINDOW_MAX_AGE_S", 0.0)

    async def scenario(replica, channel):
        await append(channel, 3)
        await channel.read(0, BATCH_BYTES)
        await append(channel, 1)
        second = await channel.read(3, BATCH_BYTES)
        assert (second.next_offset, second.high_watermark) == (6, 12)  # the replica's current watermark
    run_with_replica(short_dir, scenario)


def test_a_window_in_a_replaced_segment_file_is_not_used(short_dir):
    async def scenario(replica, channel):
        await append(channel, 3)
        first = await channel.read(0, BATCH_BYTES)
        await append(channel, 1)
        path = Path(first.regions[0].path)
        copy = path.with_suffix(".copy")
        shutil.copyfile(path, copy)
        copy.replace(path)                                    # the same bytes, another file (inode)
        second = await channel.read(3, BATCH_BYTES)
        assert (second.next_offset, second.high_watermark) == (6, 12)  # asked the replica
    run_with_replica(short_dir, scenario)


def test_a_window_of_a_deleted_segment_is_not_used(short_dir):
    async def scenario(replica, channel):
        await append(channel, 12)                             # several 1 KiB segments
        first = await channel.read(0, BATCH_BYTES)
        assert (await replica.delete_records(30)).error is ErrorCode.NONE
        assert not Path(first.regions[0].path).exists()      # renamed .deleted, removed later
        second = await channel.read(first.next_offset, BATCH_BYTES)
        assert second.error is ErrorCode.OFFSET_OUT_OF_RANGE and second.log_start_offset == 30
    run_with_replica(short_dir, scenario)


def test_a_fetch_right_after_delete_records_never_returns_a_record_below_the_new_log_start(short_dir):
    """DeleteRecords moves the log start inside a segment and leaves its file as it is, so the
    window a consumer's last read opened still names valid bytes: the read at its offset,
    right after, must still be refused as Kafka refuses it (OFFSET_OUT_OF_RANGE)."""
    async def scenario(replica, channel):
        await append(channel, 3)                                  # offsets 0-8, one segment
        first = await channel.read(0, BATCH_BYTES)                # opens a window at offset 3
        assert first.next_offset == 3
        deleted = channel.delete_records(5)
        after = channel.read(3, BATCH_BYTES)                      # sent right after, not awaited between
        assert (await deleted).low_watermark == 5
        result = await after
        assert (result.error, result.log_start_offset, result.regions) == (ErrorCode.OFFSET_OUT_OF_RANGE, 5, ())
        assert (await channel.read(6, BATCH_BYTES)).log_start_offset == 5
    run_with_replica(short_dir, scenario)


def test_a_window_opened_before_a_delete_records_it_did_not_see_is_not_served_below_the_log_start(short_dir):
    """A read answered before the DeleteRecords (queued ahead of it) opens a window with the old
    log start: the delete's answer forgets it."""
    async def scenario(replica, channel):
        await append(channel, 3)
        first = channel.read(0, BATCH_BYTES)
        deleted = channel.delete_records(5)
        assert ((await first).next_offset, (await deleted).low_watermark) == (3, 5)
        assert (await channel.read(3, BATCH_BYTES)).error is ErrorCode.OFFSET_OUT_OF_RANGE
    run_with_replica(short_dir, scenario)


def test_a_later_log_start_reported_by_any_answer_stops_every_window_below_it(short_dir):
    """The log start moved without the channel's DeleteRecords (the replica's own, as retention
    would): once an answer reports it, no window serves below it."""
    async def scenario(replica, channel):
        await append(channel, 6)                                  # offsets 0-17
        await channel.read(0, BATCH_BYTES)                        # a window at 3
        await channel.read(9, BATCH_BYTES)                        # a window at 12
        assert (await replica.delete_records(5)).error is ErrorCode.NONE
        assert (await channel.read(12, BATCH_BYTES)).log_start_offset == 5   # served from its window
        assert (await channel.read(15, 1)).log_start_offset == 5            # from the replica: it says 5
        assert (await channel.read(3, BATCH_BYTES)).error is ErrorCode.OFFSET_OUT_OF_RANGE
    run_with_replica(short_dir, scenario)


def test_forgotten_windows_send_reads_to_the_replica(short_dir):
    async def scenario(replica, channel):
        await append(channel, 3)
        await channel.read(0, BATCH_BYTES)
        await append(channel, 1)
        channel.forget_windows()
        assert (await channel.read(3, BATCH_BYTES)).high_watermark == 12   # the replica's, not the window's 9
    run_with_replica(short_dir, scenario)


def test_an_empty_read_parks_until_an_append_while_other_reads_are_answered(short_dir):
    async def scenario(replica, channel):
        await append(channel, 1)
        parked = asyncio.ensure_future(channel.read(3, 1 << 20, max_wait_ms=5_000))
        await asyncio.sleep(0.05)
        assert not parked.done()
        assert (await channel.read(0, 1 << 20)).next_offset == 3   # answered past the parked read
        await append(channel, 1)
        woken = await asyncio.wait_for(parked, 5)
        assert (woken.error, woken.next_offset, woken.size) == (ErrorCode.NONE, 6, BATCH_BYTES)
        expired = await channel.read(6, 1 << 20, max_wait_ms=50)
        assert (expired.error, expired.regions, expired.high_watermark) == (ErrorCode.NONE, (), 6)
    run_with_replica(short_dir, scenario)


def test_a_read_failing_on_disk_answers_a_storage_error_and_the_channel_keeps_serving(short_dir, monkeypatch):
    async def scenario(replica, channel):
        await append(channel, 2)
        real_read = replica.serving.log.read

        def failing_read(*args, **kwargs):
            raise OSError(5, "Input/output error")
        monkeypatch.setattr(replica.serving.log, "read", failing_read)
        failed = await channel.read(0, 1 << 20)
        assert (failed.error, failed.regions) == (ErrorCode.KAFKA_STORAGE_ERROR, ())
        monkeypatch.setattr(replica.serving.log, "read", real_read)
        assert (await channel.read(3, 1 << 20)).next_offset == 6
    run_with_replica(short_dir, scenario)


def test_two_clusters_on_one_machine_keep_their_own_replica_sockets(short_dir):
    """Broker 0 of two clusters in the same Ray namespace, each with a replica of topic t: each
    front end reaches its own replica, also after the other closes (which removes its socket)."""
    from rafka.partition_worker.data_channel import socket_path

    async def main() -> None:
        replicas, paths = [], []
        for cluster in ("a", "b"):
            log_dir = str(short_dir / cluster / "logs")
            paths.append(socket_path("rafka", "replica:0:t-0", log_dir, "some-topic-id"))
            replicas.append(PartitionReplica(0, TopicPartition("t", 0), log_dir, CONFIG, paths[-1]))
            assert replicas[-1].become(LeaderAndIsr(0, 1, (0,), (0,), 1)) is ErrorCode.NONE
            await replicas[-1].ready()
        channels = [ReplicaChannel(None, path) for path in paths]
        try:
            assert (await channels[0].append(batch(1), 1)).base_offset == 0
            assert (await channels[1].append(batch(2), 1)).base_offset == 0
            replicas[0].close()
            channels[0].close()
            again = ReplicaChannel(None, paths[1])   # a new connection: still cluster b's replica
            channels.append(again)
            assert (await again.append(batch(), 1)).base_offset == 2
            assert replicas[1].status().log_end_offset == 5
        finally:
            for channel in channels:
                channel.close()
            replicas[1].close()
    asyncio.run(main())


def test_list_offsets_go_over_the_socket_in_order_with_the_appends_queued_before_them(short_dir):
    """Queued without awaiting in between: each lookup sees exactly the appends queued before it."""
    async def scenario(replica, channel):
        first = channel.append(batch(), 1)
        latest_after_one = channel.list_offset(-1)
        second = channel.append(batch(), 1)
        latest_after_two = channel.list_offset(-1)
        earliest = channel.list_offset(-2)
        assert [(await f).error for f in (first, second)] == [ErrorCode.NONE] * 2
        one, two, start = await latest_after_one, await latest_after_two, await earliest
        assert (one.error, one.offset, one.leader_epoch) == (ErrorCode.NONE, 3, 3)
        assert (two.offset, start.offset) == (6, 0)
        replica.become(LeaderAndIsr(2, 4, (2, 1), (2, 1), 1))    # a follower now: clients go elsewhere
        assert (await channel.list_offset(-1)).error is ErrorCode.NOT_LEADER_OR_FOLLOWER
    run_with_replica(short_dir, scenario)


def test_appends_written_at_once_and_appends_queued_while_the_socket_is_full_keep_their_order(short_dir):
    """A connected channel writes a request straight to the socket while the socket takes more,
    and queues it behind the others once it does not: 12 MiB queued without awaiting fills it,
    and every append lands in the order it was made."""
    big = encode_batch([Record(0, NOW, None, b"v" * (200 << 10))])

    async def scenario(replica, channel):
        assert (await channel.append(batch(), 1)).error is ErrorCode.NONE     # connected now
        appends = [channel.append(big, 1) for _ in range(60)]
        assert channel._outbox                                                # the last ones had to wait
        results = [await a for a in appends]
        assert [r.error for r in results] == [ErrorCode.NONE] * 60
        assert [r.base_offset for r in results] == list(range(3, 63))
    run_with_replica(short_dir, scenario, config=LogConfig(retention_ms=-1, retention_bytes=-1))


def test_delete_records_goes_over_the_socket_so_a_lookup_right_after_sees_it(short_dir):
    """confluent-kafka's admin client sends DeleteRecords and then ListOffsets(earliest) without
    waiting in between: the lookup must see the new log start."""
    async def scenario(replica, channel):
        await append(channel, 3)                                  # offsets 0-8
        deleted = channel.delete_records(5)
        earliest = channel.list_offset(-2)
        result, start = await deleted, await earliest
        assert (result.error, result.low_watermark) == (ErrorCode.NONE, 5)
        assert (start.error, start.offset) == (ErrorCode.NONE, 5)
        assert (await channel.delete_records(100)).error is ErrorCode.OFFSET_OUT_OF_RANGE
    run_with_replica(short_dir, scenario)


def test_a_connection_to_a_closed_partition_never_reaches_the_one_its_process_opens_next(short_dir):
    """A process whose replica closed (it rested, or its topic was deleted) opens another
    partition as a spare; a front end's connection from before must not write into that one."""
    async def main() -> None:
        replica = PartitionReplica(1, TopicPartition("t", 0), str(short_dir / "logs"), CONFIG,
                                   str(short_dir / "a.sock"))
        assert replica.become(LeaderAndIsr(1, 3, (1,), (1,), 1)) is ErrorCode.NONE
        await replica.ready()
        before = ReplicaChannel(None, str(short_dir / "a.sock"))
        await append(before, 1)
        replica.close()
        await replica.open(TopicPartition("u", 0), str(short_dir / "logs"), CONFIG, str(short_dir / "b.sock"))
        assert replica.become(LeaderAndIsr(1, 1, (1,), (1,), 1)) is ErrorCode.NONE
        try:
            late = await before.append(batch(), 1)
            assert late.error is ErrorCode.NOT_LEADER_OR_FOLLOWER
            assert replica.status().log_end_offset == 0   # u-0 took nothing of t-0's connection
            after = ReplicaChannel(None, str(short_dir / "b.sock"))
            await append(after, 1)
            assert replica.status().log_end_offset == 3
            after.close()
        finally:
            before.close()
            replica.close()
    asyncio.run(main())


def test_a_follower_read_parked_before_a_close_never_counts_for_the_partition_opened_next(short_dir):
    """A leader's process closes with a follower's read parked at the log end, and opens another
    partition whose ISR has the same follower: the old read, woken by the new partition's first
    append, must not pass for that follower's fetch (the high watermark, and acks=all, would move
    with the leader alone)."""
    async def main() -> None:
        logs = str(short_dir / "logs")
        replica = PartitionReplica(1, TopicPartition("t", 0), logs, CONFIG, str(short_dir / "a.sock"))
        assert replica.become(LeaderAndIsr(1, 3, (1, 2), (1, 2), 1)) is ErrorCode.NONE
        await replica.ready()
        leader = ReplicaChannel(None, str(short_dir / "a.sock"))
        follower = ReplicaChannel(None, str(short_dir / "a.sock"))
        await leader.append(batch(), 1)                          # t-0: offsets 0-2
        parked = follower.start_replica_read(2, 3, 3, 1 << 20, max_wait_ms=500)   # at t-0's end
        await asyncio.sleep(0.05)
        replica.close()
        await replica.open(TopicPartition("u", 0), logs, CONFIG, str(short_dir / "b.sock"))
        assert replica.become(LeaderAndIsr(1, 3, (1, 2), (1, 2), 1)) is ErrorCode.NONE   # (the same epoch)
        now = ReplicaChannel(None, str(short_dir / "b.sock"))
        try:
            for _ in range(2):                                   # u-0: offsets 0-5
                assert (await now.append(batch(), 1)).error is ErrorCode.NONE
            old = await asyncio.wait_for(parked.answer, 5)
            assert old.error is ErrorCode.NOT_LEADER_OR_FOLLOWER   # its connection is closed
            assert replica.status().high_watermark == 0              # broker 2 has fetched nothing of u-0
        finally:
            for channel in (leader, follower, now):
                channel.close()
            replica.close()
    asyncio.run(main())


def test_request_ids_wrap_around_the_ids_still_waiting():
    async def scenario():
        channel = ReplicaChannel(None, "/nonexistent.sock")
        channel._ids = iter([0xFFFFFFFF, 0x100000000, 0x100000001, 0x100000002])   # wraps to 0, 1, 2
        channel._pending[1] = (asyncio.get_running_loop().create_future(), None, None)   # a follow read's
        assert [channel._new_id(), channel._new_id()] == [0xFFFFFFFF, 2]
    asyncio.run(scenario())
