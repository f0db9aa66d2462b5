"""DormantChannel: reads of a dormant replica from its closed log, and everything else handed,
in order, to the replica once it has woken (no Ray: a real closed log, a stand-in live channel)."""
from __future__ import annotations

import asyncio

from rafka.common.config import LogConfig
from rafka.common.errors import ErrorCode
from rafka.common.types import TopicPartition
from rafka.net.data_plane import await_fetch
from rafka.net.dormant_channel import DormantChannel
from rafka.partition_worker.closed_log import read_closed_log
from rafka.partition_worker.log import PartitionLog
from rafka.partition_worker.messages import (
    EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, FetchResult, OffsetLookup, ProduceResult,
)
from rafka.partition_worker.record_batch import Record, encode_batch
from tests.waiting import eventually

TP = TopicPartition("t", 0)


def closed_log(directory, batches: int = 4):
    log = PartitionLog.open(directory, LogConfig(segment_bytes=1024, index_interval_bytes=128))
    for _ in range(batches):
        log.append(bytearray(encode_batch([Record(i, 1_000, b"k", b"v" * 40) for i in range(3)])),
                   leader_epoch=2, max_batch_bytes=1 << 20)
    log.close()
    return read_closed_log(directory)


class LiveChannel:
    """Stands in for the woken replica's ReplicaChannel: records the calls in the order made."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def append(self, records, acks, timeout_ms=0):
        self.calls.append(("append", records))
        return _done(ProduceResult(ErrorCode.NONE, base_offset=len(self.calls)))

    def list_offset(self, timestamp, isolation_level=0):
        self.calls.append(("list_offset", timestamp) + (("committed",) if isolation_level else ()))
        return _done(OffsetLookup(ErrorCode.NONE, 5, 7, 2))

    def write_txn_marker(self, producer_id, producer_epoch, coordinator_epoch, commit, timeout_ms):
        self.calls.append(("marker", producer_id, commit))
        return _done(ProduceResult(ErrorCode.NONE, base_offset=len(self.calls)))

    def start_read(self, offset, max_bytes, max_wait_ms=0, read_committed=False):
        self.calls.append(("read", offset) if not read_committed else ("read", offset, "committed"))

        class Read:
            answer = _done(FetchResult(ErrorCode.NONE, 99, 99, 0))

            def release(self):
                pass
        return Read()


def _done(value):
    f = asyncio.get_running_loop().create_future()
    f.set_result(value)
    return f


def test_reads_come_from_the_files_and_need_no_wake(tmp_path):
    async def main():
        woken = []
        channel = DormantChannel(TP, closed_log(tmp_path), woken.append)
        result = await channel.read(0, 1 << 20)
        assert result.error is ErrorCode.NONE and result.next_offset == 12 and result.high_watermark == 12
        assert (await channel.list_offset(LATEST_TIMESTAMP)).offset == 12
        assert (await channel.list_offset(EARLIEST_TIMESTAMP)).offset == 0
        assert await channel.offset_for_leader_epoch(-1, 0) == (ErrorCode.NONE, -1, -1)   # no epochs written here
        assert (await channel.read_log_end(3, 1 << 20)).next_offset == 12
        assert woken == []
    asyncio.run(main())


def test_writes_wake_the_replica_once_and_reach_it_in_the_order_they_came(tmp_path):
    async def main():
        woken = []
        channel = DormantChannel(TP, closed_log(tmp_path), woken.append)
        first = channel.append(b"one", 1)
        lookup = channel.list_offset(1_000)          # by time: the replica answers it
        second = channel.append(b"two", 1)
        assert woken == [TP]                         # asked once
        live = LiveChannel()
        channel.woke(live)
        assert (await first).base_offset == 1 and (await second).base_offset == 3
        assert (await lookup).offset == 7
        assert live.calls == [("append", b"one"), ("list_offset", 1_000), ("append", b"two")]
        third = channel.append(b"three", 1)          # after the wake: straight through
        assert (await third).base_offset == 4
    asyncio.run(main())


def test_the_first_write_to_a_never_written_partition_is_told_once_and_a_written_ones_never(tmp_path):
    async def main():
        told, woken = [], []
        new = DormantChannel(TP, closed_log(tmp_path / "new", batches=0), woken.append, first_write=told.append)
        assert new.never_written
        new.append(b"one", 1)
        new.append(b"two", 1)                        # a wake is asked already: not told again
        assert told == [TP] and woken == [TP]
        new.woke(LiveChannel())
        assert not new.never_written                 # runs again

        written = DormantChannel(TP, closed_log(tmp_path / "old"), woken.append, first_write=told.append)
        assert not written.never_written
        written.append(b"three", 1)
        assert told == [TP]                          # records already: its siblings are not woken
        sibling = DormantChannel(TopicPartition("t", 1), closed_log(tmp_path / "sib", batches=0), woken.append)
        sibling.wake_now()                           # (what the front end does for a new sibling)
        sibling.append(b"four", 1)
        assert woken == [TP, TP, TopicPartition("t", 1)]   # asked once, by the front end
    asyncio.run(main())


def test_a_partition_that_leaves_answers_its_waiting_writes_as_lost(tmp_path):
    async def main():
        channel = DormantChannel(TP, closed_log(tmp_path), lambda tp: None)
        waiting = channel.append(b"x", 1)
        channel.woke(None)
        assert (await waiting).error is ErrorCode.NOT_LEADER_OR_FOLLOWER
        channel2 = DormantChannel(TP, closed_log(tmp_path / "2"), lambda tp: None)
        waiting = channel2.append(b"y", 1)
        channel2.wake_failed()                       # the broker could not be asked: the client retries
        assert (await waiting).error is ErrorCode.NOT_LEADER_OR_FOLLOWER
    asyncio.run(main())


def test_a_fetch_parked_at_the_end_goes_on_at_the_replica_when_it_wakes(tmp_path):
    async def main():
        channel = DormantChannel(TP, closed_log(tmp_path), lambda tp: None)
        parked = channel.start_read(12, 1 << 20, max_wait_ms=10_000)
        await asyncio.sleep(0)
        assert not parked.answer.done()
        live = LiveChannel()
        channel.woke(live)
        result = await asyncio.wait_for(parked.answer, 5)
        assert result.high_watermark == 99 and live.calls == [("read", 12)]
    asyncio.run(main())


class ParkedLiveChannel:
    """A woken replica's channel whose reads park until released (a consumer at the log end)."""

    def __init__(self) -> None:
        self.reads = self.released = 0

    def start_read(self, offset, max_bytes, max_wait_ms=0, read_committed=False):
        answer = asyncio.get_running_loop().create_future()
        channel = self
        self.reads += 1

        class Read:
            def __init__(self):
                self.answer = answer

            def release(self):
                channel.released += 1
                if not answer.done():
                    answer.set_result(FetchResult(ErrorCode.NONE, offset, offset, 0))
        return Read()


def test_a_parked_fetch_that_went_on_at_the_woken_replica_ends_when_released(tmp_path):
    """Its fetch is complete (another partition had data, or its wait ran out): the read that went
    on at the replica is released too, not left to wait out the whole max_wait_ms again."""
    async def main():
        channel = DormantChannel(TP, closed_log(tmp_path), lambda tp: None)
        parked = channel.start_read(12, 1 << 20, max_wait_ms=60_000)
        await asyncio.sleep(0)
        live = ParkedLiveChannel()
        channel.woke(live)
        await eventually(lambda: live.reads == 1, "the read went on at the replica")
        await asyncio.sleep(0)
        assert not parked.answer.done()
        parked.release()
        result = await asyncio.wait_for(parked.answer, 5)
        assert result.regions == () and live.released == 1
    asyncio.run(main())


def test_a_parked_fetch_ends_at_its_wait_or_when_released(tmp_path):
    async def main():
        channel = DormantChannel(TP, closed_log(tmp_path), lambda tp: None)
        loop = asyncio.get_running_loop()
        started = loop.time()
        timed = await channel.read(12, 1 << 20, max_wait_ms=200)
        assert timed.regions == () and loop.time() - started >= 0.19
        parked = channel.start_read(12, 1 << 20, max_wait_ms=60_000)
        data = channel.start_read(0, 100)
        merged = await asyncio.wait_for(await_fetch([parked, data], 1, 60_000), 5)   # the other has data
        assert merged[0].regions == () and merged[1].regions
    asyncio.run(main())


def test_while_closing_reads_wait_for_the_closed_log(tmp_path):
    async def main():
        channel = DormantChannel(TP, None, lambda tp: None)
        assert channel.pending
        read = channel.read(0, 1 << 20)
        follower = channel.follower_append(b"", 12, 0)
        await asyncio.sleep(0.01)
        assert not read.done()
        channel.rested(closed_log(tmp_path))
        assert (await read).next_offset == 12
        assert (await follower).log_end_offset == 12
    asyncio.run(main())


def test_while_closing_offset_lookups_wait_for_the_closed_log_or_a_wake_asked_again(tmp_path):
    """Calls that came while the replica was closing: the broker could not wake it then (it was
    neither running nor dormant), so a call held for the replica asks again once the log is
    closed, and the earliest/latest lookups are answered from the closed log without a wake.
    (A ListOffsets during a rest once waited for good: get_watermark_offsets timed out.)"""
    async def main():
        wakes: list[TopicPartition] = []
        channel = DormantChannel(TP, None, wakes.append)
        latest = channel.list_offset(LATEST_TIMESTAMP)
        earliest = channel.list_offset(EARLIEST_TIMESTAMP)
        by_time = channel.list_offset(1_000)   # reads record timestamps: needs the replica
        await asyncio.sleep(0.01)
        assert wakes == [TP] and not latest.done() and not by_time.done()
        channel.rested(closed_log(tmp_path))
        assert (await latest).offset == 12 and (await earliest).offset == 0
        assert wakes == [TP, TP]   # the held lookup asked again
        live = LiveChannel()
        channel.woke(live)
        assert (await by_time).offset == 7 and live.calls == [("list_offset", 1_000)]
    asyncio.run(main())


def test_a_follower_read_behind_the_log_end_wakes_the_leader(tmp_path):
    async def main():
        woken = []
        channel = DormantChannel(TP, closed_log(tmp_path), woken.append)
        at_end = channel.start_replica_read(2, -1, 12, 1 << 20, max_wait_ms=0)
        assert (await at_end.answer).error is ErrorCode.NONE and woken == []
        channel.start_replica_read(2, -1, 6, 1 << 20)
        assert woken == [TP]
    asyncio.run(main())


def test_a_follower_outside_the_isr_wakes_the_leader_to_join_it(tmp_path):
    async def main():
        woken = []
        channel = DormantChannel(TP, closed_log(tmp_path), woken.append, isr=lambda tp: (1, 2))
        channel.start_replica_read(2, -1, 12, 1 << 20)      # in the ISR, at the end: answered here
        assert woken == []
        channel.start_replica_read(3, -1, 12, 1 << 20)      # caught up, but only the leader can add it
        assert woken == [TP]
    asyncio.run(main())


def test_a_leader_is_quiet_only_once_every_follower_has_everything(tmp_path):
    from rafka.partition_worker.replica_actor import PartitionReplica
    from rafka.partition_worker.replica_state import LeaderAndIsr

    async def main():
        replica = PartitionReplica(1, TP, str(tmp_path), LogConfig(), None)
        replica.become(LeaderAndIsr(1, 0, (1, 2), (1, 2, 3), 1))
        replica.append([bytearray(encode_batch([Record(0, 1_000, b"k", b"v")]))], 1)
        assert not replica.quiet()                       # follower 2 (in the ISR) has not fetched it
        replica.replica_read(2, 0, 1, 1 << 20)
        assert replica.quiet()                           # the high watermark is the log end
        replica.replica_read(3, 0, 0, 1 << 20)           # 3, outside the ISR, catches up
        assert not replica.quiet()
        replica.replica_read(3, 0, 1, 1 << 20)
        assert replica.quiet()
        replica.close()
    asyncio.run(main())


def test_a_produce_waits_for_the_wake_within_half_its_timeout_then_is_withdrawn(tmp_path):
    """A rest is invisible: no NOT_LEADER_OR_FOLLOWER while the replica wakes. A wake slower than
    half the produce's timeout answers REQUEST_TIMED_OUT, and that produce never reaches the
    replica (nothing written: the client's retry is the only copy)."""
    async def main():
        woken = []
        channel = DormantChannel(TP, closed_log(tmp_path), woken.append)
        late = channel.append(b"late", -1, timeout_ms=100)       # waits at most 50 ms
        unbounded = channel.append(b"acks0", 0, timeout_ms=100)  # acks=0: no one waits for an answer
        assert woken == [TP]
        result = await asyncio.wait_for(late, 5)
        assert result.error is ErrorCode.REQUEST_TIMED_OUT
        in_time = channel.append(b"in-time", -1, timeout_ms=30_000)
        live = LiveChannel()
        channel.woke(live)
        assert (await in_time).error is ErrorCode.NONE
        assert (await unbounded).error is ErrorCode.NONE
        assert live.calls == [("append", b"acks0"), ("append", b"in-time")]
    asyncio.run(main())


def test_the_group_coordinators_own_write_waits_for_the_wake_as_long_as_it_says(tmp_path):
    """Group metadata and commits (acks=all, offsets.commit.timeout.ms) wait the whole timeout
    for a wake, not half: a failed group metadata write makes the group rebalance again."""
    async def main():
        channel = DormantChannel(TP, closed_log(tmp_path), lambda tp: None)
        halved = channel.append(b"client", -1, timeout_ms=200)                     # gives up at 100 ms
        whole = channel.append(b"group", -1, timeout_ms=200, wake_wait_ms=200)   # ...at 200 ms
        await asyncio.sleep(0.15)
        assert halved.done() and (await halved).error is ErrorCode.REQUEST_TIMED_OUT
        assert not whole.done()
        live = LiveChannel()
        channel.woke(live)
        assert (await whole).error is ErrorCode.NONE and live.calls == [("append", b"group")]
    asyncio.run(main())


def waiting_produce(tmp_path):
    """A dormant channel whose wake was asked for by a produce still waiting: (channel, wakes, answer)."""
    woken = []
    channel = DormantChannel(TP, closed_log(tmp_path), woken.append)
    return channel, woken, channel.append(b"one", 1, timeout_ms=30_000)


def test_a_wake_the_broker_did_not_answer_in_time_is_asked_again_and_callers_wait_on(tmp_path):
    async def main():
        channel, woken, waiting = waiting_produce(tmp_path)
        channel.wake_timed_out()
        assert woken == [TP, TP] and not waiting.done()
        live = LiveChannel()
        channel.woke(live)
        assert (await waiting).error is ErrorCode.NONE and live.calls == [("append", b"one")]
        channel.wake_timed_out()                                   # woke meanwhile: nothing to ask
        assert woken == [TP, TP]
    asyncio.run(main())


def test_a_wake_the_broker_refused_answers_the_waiting_produce_as_lost(tmp_path):
    async def main():
        channel, _, waiting = waiting_produce(tmp_path)
        channel.wake_failed()
        assert (await waiting).error is ErrorCode.NOT_LEADER_OR_FOLLOWER
    asyncio.run(main())


def test_a_timestamp_lookup_waits_for_the_wake_within_its_bound(tmp_path, monkeypatch):
    from rafka.net import dormant_channel

    monkeypatch.setattr(dormant_channel, "STARTING_WAIT_MS", 50)

    async def main():
        channel = DormantChannel(TP, closed_log(tmp_path), lambda tp: None)
        late = await asyncio.wait_for(channel.list_offset(1_000), 5)
        assert late.error is ErrorCode.REQUEST_TIMED_OUT
        waiting = channel.list_offset(1_000)
        live = LiveChannel()
        channel.woke(live)
        assert (await waiting).offset == 7 and live.calls == [("list_offset", 1_000)]
    asyncio.run(main())


def test_read_committed_is_served_from_the_files_while_the_closed_log_knows_its_lso(tmp_path):
    """A transaction left open at close bounds read_committed reads and read_committed's latest
    offset; a marker is a write (it wakes the replica); a closed log whose LSO is unknown (its
    high watermark below its end) sends read_committed reads to the replica."""
    async def main():
        log = PartitionLog.open(tmp_path, LogConfig())
        log.append(bytearray(encode_batch([Record(0, 1_000, b"k", b"v")])), leader_epoch=2, max_batch_bytes=1 << 20)
        log.append(bytearray(encode_batch([Record(0, 1_000, b"k", b"v")], producer_id=9, producer_epoch=0,
                                          base_sequence=0, is_transactional=True)),
                   leader_epoch=2, max_batch_bytes=1 << 20)
        log.close()
        woken = []
        channel = DormantChannel(TP, read_closed_log(tmp_path), woken.append)
        committed = await channel.read(0, 1 << 20, read_committed=True)
        assert (committed.next_offset, committed.last_stable_offset, committed.aborted_transactions) == (1, 1, ())
        assert (await channel.read(0, 1 << 20)).next_offset == 2
        assert (await channel.list_offset(LATEST_TIMESTAMP, 1)).offset == 1
        assert (await channel.list_offset(LATEST_TIMESTAMP)).offset == 2
        assert woken == []
        marker = channel.write_txn_marker(9, 0, 0, True, 30_000)
        assert woken == [TP]
        live = LiveChannel()
        channel.woke(live)
        assert (await marker).error is ErrorCode.NONE and live.calls == [("marker", 9, True)]

        unknown = DormantChannel(TP, read_closed_log(tmp_path, high_watermark=1), woken.append)
        read = unknown.start_read(0, 1 << 20, 0, read_committed=True)
        lookup = unknown.list_offset(LATEST_TIMESTAMP, 1)
        assert woken == [TP, TP]                          # both need the replica
        live = LiveChannel()
        unknown.woke(live)
        await read.answer
        await lookup
        assert live.calls == [("read", 0, "committed"), ("list_offset", LATEST_TIMESTAMP, "committed")]
    asyncio.run(main())
