"""`DormantChannel`: the front end's channel to a replica that has no process (dormant).

A replica with no writes for `replica.dormant.after.ms` closes cleanly and its process exits
(coordinator/broker/reconciler.py); its partition stays online. This channel stands in for
its `ReplicaChannel` with the same methods, so handlers need not know:

- reads are served from the closed log's files (`ClosedLogReader`), as the replica would:
  consumers' and followers' fetches (read_committed ones too while the closed log knows its
  last stable offset), the group coordinator's loads, ListOffsets for the earliest and latest
  offsets, OffsetForLeaderEpoch. A fetch with nothing to read waits its
  `max_wait_ms` as usual; if the partition wakes meanwhile, the read goes on at the replica;
- anything else (a produce, a transaction marker, DeleteRecords, a follower behind the log
  end or under another leader epoch, a timestamp lookup) first wakes the replica (`wake(tp)`, once) and is then
  sent to it, in the order the calls came, before anything sent to the new channel directly.

A new partition is dormant from its creation (no process until a write), so the first write
to each partition of a new topic waits for a wake: a second or less on a quiet broker, seconds
to a minute behind a burst of other starts under load. A producer spreads a new topic's
records over its partitions (Kafka's partitioners do), and one that waits for each write's
answer (a flush per record) used to meet those wakes one after another. So the first write to
a partition never written (`never_written`) tells the front end (`first_write`), which wakes
the topic's other never-written partitions with it: their first writes then wait for wakes
already under way, in parallel (franz-go's TestPauseIssue489 under its suite's load).

A rest is invisible to clients (issue 56): a produce or a timestamp lookup waits for the wake
rather than being answered NOT_LEADER_OR_FOLLOWER, bounded by the request's own time (half a
produce's `timeout_ms`, as for a starting leader, so the answer reaches the client before its
own request timeout; `STARTING_WAIT_MS` for a lookup). A call still waiting then is withdrawn
(nothing of it is sent to the replica later, so nothing is written) and answered
REQUEST_TIMED_OUT, which every client retries on the same connection. Only a wake that the
broker says did not happen (the partition offline or gone) answers NOT_LEADER_OR_FOLLOWER; a
wake the broker did not answer in time is asked again (`wake_timed_out`).

While the replica is being closed (`pending`: the front end stopped sending it requests, the
broker has not yet said the log is closed) reads wait for the closed log too.
Runs on the front end's event loop; not thread-safe.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any, Awaitable, Callable

from rafka.common.errors import ErrorCode
from rafka.common.events import first_of
from rafka.common.types import TopicPartition
from rafka.partition_worker.closed_log import ClosedLog, ClosedLogError, ClosedLogReader
from rafka.net.routing import STARTING_WAIT_MS
from rafka.partition_worker.messages import (
    EARLIEST_LOCAL_TIMESTAMP, EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, DeleteRecordsResult, FetchIsolation, FetchResult,
    FollowerAppendResult, OffsetLookup, ProduceResult,
)

log = logging.getLogger(__name__)

_LOST = FetchResult(ErrorCode.NOT_LEADER_OR_FOLLOWER)
_WAKE_LATE = "the partition's replica is still waking (it had been put to rest)"


class DormantRead:
    """A read of a dormant partition (the `PendingRead` of `data_plane.py`): its answer, and
    `release()` to answer now with what there is."""

    reused = False

    def __init__(self, answer: asyncio.Future, release: Callable[[], None] | None = None) -> None:
        self.answer = answer
        self._release = release

    def release(self) -> None:
        if self._release is not None and not self.answer.done():
            self._release()

    def set_aside(self) -> None:
        """Never left for a next fetch: its wait is the front end's own (see `PendingRead`)."""
        return None


class DormantChannel:
    """Reads from the files of a dormant replica; wakes it for anything else."""

    actor = None   # no process: the replica fetcher asks `closed` instead

    def __init__(self, tp: TopicPartition, closed: ClosedLog | None, wake: Callable[[TopicPartition], None],
                 isr: Callable[[TopicPartition], tuple[int, ...]] | None = None,
                 first_write: Callable[[TopicPartition], None] | None = None) -> None:
        self.tp = tp
        self._first_write = first_write   # told of a write to this partition while it was never written
        self._isr = isr   # the partition's ISR as the broker's metadata says (a follower outside it wakes the leader)
        self.socket_path: str | None = None   # never a live replica's: a live one replaces it
        self.closed: ClosedLog | None = None
        self._reader: ClosedLogReader | None = None
        self._wake = wake
        self._wake_asked = False
        self._live: Any = None        # the replica's channel once it woke
        self._ended = False           # woke, or no longer here: every deferred call was handed on
        self._deferred: list[tuple[Callable[[Any], Awaitable], asyncio.Future, Any]] = []
        self._state_changed = asyncio.Event()   # rested / woke: parked reads look again
        if closed is not None:
            self.rested(closed)

    # -- what the front end tells it -------------------------------------------------------
    @property
    def ended(self) -> bool:
        """Its replica runs again (or the partition left): it only hands calls on."""
        return self._ended

    @property
    def never_written(self) -> bool:
        """Its closed log is empty and starts at 0 (a new partition's, say), and it still rests."""
        closed = self.closed
        return (closed is not None and not self._ended and closed.log_end_offset == 0
                and closed.log_start_offset == 0)

    @property
    def pending(self) -> bool:
        """Its replica is closing: the closed log is not known yet."""
        return self.closed is None and not self._ended

    def rested(self, closed: ClosedLog) -> None:
        """The replica's log is closed (again, with a new leader epoch, say): serve reads from it.
        Calls that came while it was closing asked for a wake the broker could not do yet (the
        replica was neither running nor dormant): they ask again now."""
        if closed == self.closed:
            return
        if self._reader is not None:
            self._reader.close()
        self.closed, self._reader = closed, ClosedLogReader(closed)
        if self._deferred and not self._ended:
            self._wake_asked = True
            self._wake(self.tp)
        self._changed()

    def woke(self, channel: Any | None) -> None:
        """The replica runs again behind `channel` (None: the partition is no longer served here):
        deferred calls go to it now, in the order they came; parked reads follow."""
        if self._ended:
            return
        self._ended, self._live = True, channel
        deferred, self._deferred = self._deferred, []
        for call, future, if_lost in deferred:
            if future.done():
                continue
            if channel is None:
                future.set_result(if_lost)
            else:
                _chain(call(channel), future, if_lost)
        self.close()
        self._changed()

    def wake_failed(self) -> None:
        """The broker says it did not wake it (the partition is offline, or no longer here): the
        calls waiting for it are answered as lost (clients retry) and the next one asks again."""
        self._wake_asked = False
        deferred, self._deferred = self._deferred, []
        for _, future, if_lost in deferred:
            if not future.done():
                future.set_result(if_lost)

    def wake_timed_out(self) -> None:
        """The broker did not answer the wake in time (it may still be under way, behind others):
        the calls waiting keep waiting, each within its own bound, and the wake is asked again."""
        self._wake_asked = False
        if self._deferred and not self._ended:
            self._wake_asked = True
            self._wake(self.tp)

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    def _changed(self) -> None:
        self._state_changed.set()
        self._state_changed = asyncio.Event()

    # -- writes and other calls that need the replica --------------------------------------
    def _through_replica(self, call: Callable[[Any], Awaitable], if_lost: Any, *,
                         bound_s: float | None = None, if_late: Any = None) -> Awaitable:
        """`call(the replica's channel)` once it runs, queued now (calls keep their order). With
        `bound_s`, a call still queued that long after is withdrawn (never made) and answered
        `if_late`."""
        if self._ended:
            if self._live is None:
                return _done(if_lost)
            return call(self._live)
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        entry = (call, future, if_lost)
        self._deferred.append(entry)
        if bound_s is not None:
            timer = loop.call_later(max(bound_s, 0.0), self._withdraw, entry, if_late, bound_s)
            future.add_done_callback(lambda _: timer.cancel())
        if not self._wake_asked:
            self._wake_asked = True
            self._wake(self.tp)
        return future

    def _withdraw(self, entry: tuple[Callable[[Any], Awaitable], asyncio.Future, Any], if_late: Any,
                  bound_s: float) -> None:
        """A queued call's bound passed before the wake: it is never made, and answered `if_late`
        (a call already handed on is the replica's to answer)."""
        for i, queued in enumerate(self._deferred):
            if queued is entry:
                del self._deferred[i]
                if not entry[1].done():
                    entry[1].set_result(if_late)
                log.info("%s: a request waited %.1f s for its replica to wake; answered without it", self.tp, bound_s)
                return

    def append(self, records: Any, acks: int, timeout_ms: int = 0, *,
               wake_wait_ms: int | None = None) -> Awaitable[ProduceResult]:
        """A produce once the replica runs; REQUEST_TIMED_OUT, with nothing written, when the
        wake takes more than `wake_wait_ms` (default half its `timeout_ms`, unbounded for acks=0
        or no timeout: no one waits for its answer)."""
        if wake_wait_ms is None:
            wake_wait_ms = timeout_ms // 2 if timeout_ms > 0 and acks != 0 else None
        bound_s = wake_wait_ms / 1000 if wake_wait_ms is not None else None
        if self._first_write is not None and not self._wake_asked and self.never_written:
            self._first_write(self.tp)
        return self._through_replica(lambda c: c.append(records, acks, timeout_ms),
                                     ProduceResult(ErrorCode.NOT_LEADER_OR_FOLLOWER), bound_s=bound_s,
                                     if_late=ProduceResult(ErrorCode.REQUEST_TIMED_OUT, error_message=_WAKE_LATE))

    def write_txn_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool,
                         timeout_ms: int) -> Awaitable[ProduceResult]:
        """A transaction coordinator's marker once the replica runs; REQUEST_TIMED_OUT, with
        nothing written, when the wake takes more than half its `timeout_ms` (it retries)."""
        return self._through_replica(
            lambda c: c.write_txn_marker(producer_id, producer_epoch, coordinator_epoch, commit, timeout_ms),
            ProduceResult(ErrorCode.NOT_LEADER_OR_FOLLOWER), bound_s=max(timeout_ms, 0) / 2000,
            if_late=ProduceResult(ErrorCode.REQUEST_TIMED_OUT, error_message=_WAKE_LATE))

    def delete_records(self, offset: int) -> Awaitable[DeleteRecordsResult]:
        return self._through_replica(lambda c: c.delete_records(offset),
                                     DeleteRecordsResult(ErrorCode.NOT_LEADER_OR_FOLLOWER))

    def follower_append(self, records: Any, leader_high_watermark: int,
                        leader_log_start_offset: int) -> Awaitable[FollowerAppendResult]:
        """A follower's batches from its leader: nothing to append keeps it dormant."""
        closed = self.closed
        if not len(records) and closed is not None and not self._ended:
            return _done(FollowerAppendResult(ErrorCode.NONE, closed.log_end_offset,
                                              min(leader_high_watermark, closed.log_end_offset)))
        if not len(records) and self.pending:   # (closing: answered once it is closed, or woke)
            return asyncio.ensure_future(self._once_settled(
                lambda: self.follower_append(records, leader_high_watermark, leader_log_start_offset)))
        return self._through_replica(lambda c: c.follower_append(records, leader_high_watermark,
                                                                 leader_log_start_offset),
                                     FollowerAppendResult(ErrorCode.NOT_LEADER_OR_FOLLOWER))

    async def _once_settled(self, call: Callable[[], Awaitable]) -> Any:
        """`call()` once the replica's close is done (or it woke instead)."""
        while self.pending:
            await self._state_changed.wait()
        return await call()

    def wake_now(self) -> None:
        """Wake the replica with no call waiting (the fetcher needs it to truncate)."""
        if not self._wake_asked and not self._ended:
            self._wake_asked = True
            self._wake(self.tp)

    # -- reads -----------------------------------------------------------------------------
    def read(self, fetch_offset: int, max_bytes: int, max_wait_ms: int = 0,
             read_committed: bool = False) -> Awaitable[FetchResult]:
        return self.start_read(fetch_offset, max_bytes, max_wait_ms, read_committed).answer

    def start_read(self, fetch_offset: int, max_bytes: int, max_wait_ms: int = 0, read_committed: bool = False) -> Any:
        """A consumer's read, up to the high watermark (`read_committed`: the last stable offset)."""
        isolation = FetchIsolation.TXN_COMMITTED if read_committed else FetchIsolation.HIGH_WATERMARK
        return self._read(lambda c: c.start_read(fetch_offset, max_bytes, max_wait_ms, read_committed),
                          lambda r: r.read(fetch_offset, max_bytes, isolation=isolation), max_wait_ms)

    def read_log_end(self, fetch_offset: int, max_bytes: int) -> Awaitable[FetchResult]:
        """The broker's own read (the group coordinator's load), up to the log end."""
        return self._read(lambda c: _Started(c.read_log_end(fetch_offset, max_bytes)),
                          lambda r: r.read(fetch_offset, max_bytes, isolation=FetchIsolation.LOG_END), 0).answer

    def start_replica_read(self, follower: int, leader_epoch: int, fetch_offset: int, max_bytes: int,
                           max_wait_ms: int = 0) -> Any:
        """A follower's read. From an ISR member at the log end under this leader's epoch it is
        answered here (the follower has everything: nothing moves); any other needs the replica
        (a follower outside the ISR that has caught up joins it through the leader)."""
        at_replica = (lambda c: c.start_replica_read(follower, leader_epoch, fetch_offset, max_bytes, max_wait_ms))
        closed = self.closed
        outside = self._isr is not None and follower not in self._isr(self.tp)
        if closed is not None and not self._ended and (
                outside or fetch_offset != closed.log_end_offset
                or (leader_epoch >= 0 and leader_epoch != closed.latest_epoch)):
            return DormantRead(asyncio.ensure_future(self._through_replica(
                lambda c: at_replica(c).answer, _LOST)))
        return self._read(at_replica, lambda r: r.read(fetch_offset, max_bytes, isolation=FetchIsolation.LOG_END),
                          max_wait_ms)

    def _read(self, at_replica: Callable[[Any], Any], here: Callable[[ClosedLogReader], FetchResult],
              max_wait_ms: int) -> Any:
        if self._ended:
            return at_replica(self._live) if self._live is not None else DormantRead(_done(_LOST))
        if self._reader is not None:
            try:
                result = here(self._reader)
            except ClosedLogError as e:   # the replica's recovery deals with it
                log.warning("%s: reading the dormant log failed (%s); waking its replica", self.tp, e)
                return DormantRead(asyncio.ensure_future(self._through_replica(lambda c: at_replica(c).answer, _LOST)))
            if result.regions or result.error is not ErrorCode.NONE or max_wait_ms <= 0:
                return DormantRead(_done(result))
        else:
            result = None
        released = asyncio.Event()
        task = asyncio.ensure_future(self._wait_and_read(at_replica, here, max_wait_ms, result, released))
        return DormantRead(task, released.set)

    async def _wait_and_read(self, at_replica: Callable[[Any], Any], here: Callable[[ClosedLogReader], FetchResult],
                             max_wait_ms: int, result: FetchResult | None, released: asyncio.Event) -> FetchResult:
        """A parked read: until the partition wakes (the read goes on at the replica, and a
        release reaches it there too), it is released, or `max_wait_ms` passes; then what there is."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max_wait_ms / 1000
        while True:
            if self._ended:
                if self._live is None:
                    return _LOST
                pending = at_replica(self._live)
                if not released.is_set():   # (its fetch may end first: the replica's read ends with it)
                    ending = asyncio.ensure_future(released.wait())
                    try:
                        await asyncio.wait([pending.answer, ending], return_when=asyncio.FIRST_COMPLETED)
                    finally:
                        ending.cancel()
                if released.is_set():
                    pending.release()
                return await pending.answer
            if self._reader is not None and result is None:
                try:
                    result = here(self._reader)
                except ClosedLogError:
                    result = FetchResult(ErrorCode.NONE, self.closed.high_watermark, self.closed.high_watermark,
                                         self.closed.log_start_offset)
                if result.regions or result.error is not ErrorCode.NONE:
                    return result
            remaining = deadline - loop.time()
            if (released.is_set() or remaining <= 0) and result is not None:
                return result
            await first_of([self._state_changed, released], max(remaining, 0) if result is not None else None)
            if result is not None and not self._ended and (released.is_set() or loop.time() >= deadline):
                return result

    def list_offset(self, timestamp: int, isolation_level: int = 0) -> Awaitable[OffsetLookup]:
        """The earliest and latest offsets from what the broker keeps (once it is closed, while
        it closes; read_committed's latest, `isolation_level` 1, is the last stable offset,
        when the closed log knows it); a lookup by time or of the largest timestamp reads record
        timestamps: the replica answers it."""
        closed = self.closed
        if self.pending and timestamp in (LATEST_TIMESTAMP, EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
            return asyncio.ensure_future(self._once_settled(lambda: self.list_offset(timestamp, isolation_level)))
        if closed is not None and not self._ended:
            latest = closed.last_stable_offset if isolation_level == 1 else closed.high_watermark
            if timestamp == LATEST_TIMESTAMP and latest is not None:
                return _done(OffsetLookup(ErrorCode.NONE, -1, latest, closed.latest_epoch))
            if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
                return _done(OffsetLookup(ErrorCode.NONE, -1, closed.log_start_offset, closed.latest_epoch))
        return self._through_replica(lambda c: c.list_offset(timestamp, isolation_level),
                                     OffsetLookup(ErrorCode.NOT_LEADER_OR_FOLLOWER),
                                     bound_s=STARTING_WAIT_MS / 1000, if_late=OffsetLookup(ErrorCode.REQUEST_TIMED_OUT))

    async def offset_for_leader_epoch(self, current_leader_epoch: int, leader_epoch: int) -> tuple[ErrorCode, int, int]:
        closed = self.closed
        if closed is not None and not self._ended and current_leader_epoch in (-1, closed.latest_epoch):
            return (ErrorCode.NONE, *closed.end_offset_for(leader_epoch))
        return await self._through_replica(lambda c: c.offset_for_leader_epoch(current_leader_epoch, leader_epoch),
                                           (ErrorCode.NOT_LEADER_OR_FOLLOWER, -1, -1))


class _Started:
    """An awaitable answer in `PendingRead`'s shape (for calls that cannot be released)."""

    reused = False

    def __init__(self, answer: Awaitable) -> None:
        self.answer = asyncio.ensure_future(answer)

    def release(self) -> None:
        pass

    def set_aside(self) -> None:
        return None


def _done(value: Any) -> asyncio.Future:
    future = asyncio.get_running_loop().create_future()
    future.set_result(value)
    return future


def _chain(awaitable: Awaitable, future: asyncio.Future, if_lost: Any) -> None:
    """Settle `future` with what `awaitable` gives (`if_lost` if it fails)."""
    def settle(done: asyncio.Future) -> None:
        if future.done():
            return
        if done.cancelled() or done.exception() is not None:
            future.set_result(if_lost)
        else:
            future.set_result(done.result())
    asyncio.ensure_future(awaitable).add_done_callback(settle)
