"""The front end's path to the partition replicas on its own broker.

A plain Ray actor call costs 1.4–2.2 ms round trip, one caller reaches about 1,800
calls/s, and an argument over 100 KiB goes through Ray's object store: measured here, a
produce of 6 × 100 KiB batches took 28 ms as actor calls. So the hot path does not use
actor calls. Each leader replica listens on a Unix domain socket (`data_channel.py`);
its `ReplicaChannel` keeps one connection to it and pipelines: appends are written as
they arrive (the socket keeps their order, and the replica applies them in that order),
reads are answered by request id so a parked read holds nothing up. Fetch answers are
file regions, never the bytes: the front end sends them to the client with sendfile.

A read_committed consumer's read (KIP-98) stops at the last stable offset and carries the
aborted transactions among its records. It is served from a window only when the replica said
the window is stable (below the last stable offset, no aborted transaction in it: always so in
a partition without transactions), and reads set aside and follow reads serve only reads of
their own isolation. A transaction coordinator's markers (`write_txn_marker`) are appends, in
order with the rest.

A consumer's next fetch starts where the last answer ended. A replica's answer says where
the committed whole batches end in the file of its last region, so when a consumer works
through a backlog (each answer cut off by its size limit), the channel reads on from where
the last answer ended up to there itself: it walks the batch headers in the file and answers
with the next region, without waking the replica (0.2–0.35 ms of a core per read here, the
processes taking turns on the cores). Committed batches never change, so such a window stays
right while its file does: it is used only by a read at its exact offset, while young, and
while its path still names the same file (retention, DeleteRecords and compaction swaps
rename or replace segment files); otherwise, and once the window is used up, the read goes
to the replica, whose answer opens the next window. A window is a copy of the log start offset
too, so it is also dropped when that moves or the partition's role may have: a DeleteRecords
sent through the channel (which moves the log start inside a segment, leaving its file as it
is) forgets every window, any answer reporting a later log start offset raises the floor below
which no window serves (retention), and the front end forgets a partition's windows whenever
the broker publishes its replicas anew (LeaderAndIsr, UpdateMetadata, a wake or a rest:
`forget_windows`). A read below the log start then goes to the
replica, which answers OFFSET_OUT_OF_RANGE, as Kafka does.

Ray actor calls remain for the rare control-like requests (OffsetForLeaderEpoch, once per leader
change); ListOffsets and DeleteRecords go over the data socket, in order with the appends.
"""
from __future__ import annotations

import asyncio
import itertools
import logging
import os
import time
from dataclasses import dataclass, replace
from typing import Any, Awaitable, Callable

from rafka.actors.sent_handle import actor_of
from rafka.common.errors import ErrorCode
from rafka.common.frames import FramedProtocol
from rafka.partition_worker import data_channel as dc
from rafka.partition_worker.messages import (DeleteRecordsResult, FetchIsolation, FetchResult, FollowerAppendResult,
                                             OffsetLookup, ProduceResult, Region)
from rafka.partition_worker.segment_reader import iter_headers

# the answers of requests whose replica connection was lost
_LOST_READ = FetchResult(ErrorCode.NOT_LEADER_OR_FOLLOWER)
_LOST_APPEND = ProduceResult(ErrorCode.NOT_LEADER_OR_FOLLOWER, error_message="replica data connection lost")
log = logging.getLogger(__name__)

# A window older than this is not used: the high watermark and log start it reports would be stale.
WINDOW_MAX_AGE_S = 0.5
# Windows kept per partition (one per consumer reading it at its own position).
WINDOW_SLOTS = 4
# Follow reads kept per partition, by the offset they read (one per consumer at the log's end).
FOLLOW_SLOTS = 4


@dataclass(frozen=True)
class _Window:
    """Committed whole batches from `position` to `end` in one segment file, starting at an
    offset the channel keys it by; with the watermarks of the answer it came from."""

    path: str
    inode: int
    position: int
    end: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    opened_at: float
    stable: bool   # read_committed reads may use it too (`FetchResult.stable_window`)


class ReplicaChannel:
    """Appends to and reads from one local leader replica over its data socket.

    Requests are queued for the socket at the moment `append` or `read` is *called*, not
    when the returned awaitable first runs, so two produce requests for one partition reach
    the replica in the order the front end read them from the client, even while the
    connection is still being opened.
    """

    def __init__(self, actor: Any, socket_path: str) -> None:
        self._actor = actor   # a `SentHandle` (unpickled at first use), or a handle
        self.socket_path = socket_path
        self._ids = itertools.count(1)
        # request id -> (its answer, how to decode it, the answer if the connection is lost first)
        self._pending: dict[int, tuple[asyncio.Future, Callable[[memoryview], Any], Any]] = {}
        self._outbox: list[list] = []
        self._protocol: FramedProtocol | None = None
        self._sender: asyncio.Task | None = None
        self._windows: dict[int, _Window] = {}
        # A consumer's read still parked when its fetch was answered, left for that consumer's
        # next fetch (`set_aside`), and what the last consumer's read reported of the log.
        self._aside: PendingRead | None = None
        # Reads the replica parked itself after answering a consumer's read with everything up
        # to the high watermark (`data_channel`'s follow reads), by the offset they read from
        # and whether they are read_committed.
        self._follows: dict[tuple[int, bool], PendingRead] = {}
        self._high_watermark, self._last_stable_offset, self._log_start_offset = -1, -1, -1
        self._log_start_floor = -1   # the latest log start offset any answer reported: no window serves below it

    def _submit(self, parts: list, decode: Callable[[memoryview], Any], if_lost: Any) -> asyncio.Future:
        """Queue one request (in call order) and return the future of its answer; `if_lost`
        answers it if the connection to the replica is lost first (its process gone: the
        client refreshes its metadata and retries)."""
        return self._submit_numbered(parts, decode, if_lost)[1]

    def _submit_numbered(self, parts: list, decode: Callable[[memoryview], Any],
                         if_lost: Any) -> tuple[int, asyncio.Future]:
        """`_submit`, with the request's id (to release it if it parks)."""
        request_id = self._new_id()
        future = self._expect(request_id, decode, if_lost)
        self._queue(request_id, parts)
        return request_id, future

    def _expect(self, request_id: int, decode: Callable[[memoryview], Any], if_lost: Any) -> asyncio.Future:
        """The future of the answer to come under `request_id`."""
        future = asyncio.get_running_loop().create_future()
        self._pending[request_id] = (future, decode, if_lost)
        return future

    def _new_id(self) -> int:
        """A request id (u32, never 0) not in use: a chain of follow reads keeps its id for as
        long as its consumer stays at the end, past any wrap of the counter."""
        while True:
            request_id = next(self._ids) & 0xFFFFFFFF
            if request_id and request_id not in self._pending:
                return request_id

    def _queue(self, request_id: int, parts: list) -> None:
        length = 4 + sum(len(p) for p in parts)
        frame = [dc.FRAME_HEAD.pack(length, request_id), *parts]
        protocol = self._protocol
        if not self._outbox and protocol is not None and protocol.writable():
            # Connected, nothing queued ahead and the socket takes more: write now. A task per
            # request to do it was a good part of the front end's cost per small request.
            protocol.transport.writelines(frame)
            return
        self._outbox.append(frame)
        if self._sender is None or self._sender.done():
            self._sender = asyncio.ensure_future(self._send())

    def release(self, request_id: int) -> None:
        """End the wait of parked read `request_id` now: it answers with what the replica has."""
        if request_id in self._pending:
            self._queue(0, [dc.encode_release(request_id)])

    async def _send(self) -> None:
        """Write queued requests in order; one sender at a time per channel."""
        try:
            while self._outbox:
                protocol = self._protocol
                if protocol is None or protocol.transport is None or protocol.transport.is_closing():
                    protocol = await self._connect()
                batch, self._outbox = self._outbox, []
                for parts in batch:
                    protocol.transport.writelines(parts)
                await protocol.drain()
        except (ConnectionError, OSError) as e:
            log.info("data connection to %s failed: %s", self.socket_path, e)
            self._outbox.clear()
            self._fail_pending()

    async def _connect(self) -> FramedProtocol:
        loop = asyncio.get_running_loop()
        _, protocol = await loop.create_unix_connection(
            lambda: FramedProtocol(dc.FRAME_HEAD.size, dc.frame_body_length, self._on_answer), self.socket_path)
        dc.widen_socket_buffers(protocol.transport.get_extra_info("socket"))
        protocol.closed.add_done_callback(lambda _: self._on_closed(protocol))
        self._protocol = protocol
        return protocol

    def _on_answer(self, head: bytes, body: bytearray) -> None:
        _, request_id = dc.FRAME_HEAD.unpack(head)
        entry = self._pending.pop(request_id, None)
        if entry is not None and not entry[0].done():
            future, decode, _ = entry
            future.set_result(decode(memoryview(body)))

    def _on_closed(self, protocol: FramedProtocol) -> None:
        log.info("data connection to %s closed", self.socket_path)
        if self._protocol is protocol:
            self._protocol = None
        self._fail_pending()

    def _fail_pending(self) -> None:
        pending, self._pending = self._pending, {}
        for future, _, if_lost in pending.values():
            if not future.done():
                future.set_result(if_lost)

    def append(self, records: Any, acks: int, timeout_ms: int = 0, *,
               wake_wait_ms: int | None = None) -> Awaitable[ProduceResult]:
        """Queue an append now; await the result (with acks=all, once the followers have it or
        `timeout_ms` passed). A lost replica answers NOT_LEADER_OR_FOLLOWER. (`wake_wait_ms` is
        the dormant channel's: this replica runs.)"""
        return self._submit(dc.encode_append([records], acks, timeout_ms),
                            _decode_append, _LOST_APPEND)

    def read(self, fetch_offset: int, max_bytes: int, max_wait_ms: int = 0,
             read_committed: bool = False) -> Awaitable[FetchResult]:
        """Whole batches from `fetch_offset` up to `max_bytes`, below the high watermark (with
        `read_committed`, the last stable offset); with `max_wait_ms`, an empty answer first
        waits that long for an append. A lost replica answers NOT_LEADER_OR_FOLLOWER."""
        return self.start_read(fetch_offset, max_bytes, max_wait_ms, read_committed).answer

    def start_read(self, fetch_offset: int, max_bytes: int, max_wait_ms: int = 0,
                   read_committed: bool = False) -> "PendingRead":
        """`read`, as a `PendingRead` whose wait can be ended early."""
        aside = self._take_aside(fetch_offset, max_bytes, read_committed)
        if aside is not None:
            return aside
        window = self._windows.get(fetch_offset)
        if window is not None and (window.stable or not read_committed):
            del self._windows[fetch_offset]
            result = self._read_window(window, fetch_offset, max_bytes, read_committed)
            if result is not None:
                done = asyncio.get_running_loop().create_future()
                done.set_result(result)
                return PendingRead(done, self, 0)
        # (no task per read: the answer is decoded, and the window opened, as it arrives; a
        # read that may wait names a follow id)
        follow_id = self._new_id() if max_wait_ms > 0 else 0
        isolation = FetchIsolation.TXN_COMMITTED if read_committed else FetchIsolation.HIGH_WATERMARK
        request_id, future = self._submit_numbered(
            [dc.encode_read(fetch_offset, max_bytes, max_wait_ms, isolation, follow_id)],
            self._read_answer_of(follow_id, max_bytes, read_committed), _LOST_READ)
        return PendingRead(future, self, request_id, fetch_offset, max_bytes, False, read_committed)

    def set_aside(self, read: "PendingRead") -> FetchResult | None:
        """Leave `read`, a consumer's read parked at the end of the log when its fetch is
        answered, parked for the next fetch at its offset (one per channel: a consumer at the
        end of a partition fetches there again at once). Its fetch answers the partition with
        no data and the high watermark the read waits at. Releasing it instead costs a message
        each way now and a new read at the next fetch. None (release it) unless the last answer
        reported a high watermark at its offset: one beyond says the read holds data, and with
        none known the answer's high watermark would be a guess (a consumer that stops at the
        end, `kcat -e` say, would take it for the end). A read_committed read waits at the last
        stable offset instead, which its answer reports with no aborted transactions."""
        committed = read.read_committed
        if read.fetch_offset != (self._last_stable_offset if committed else self._high_watermark):
            return None
        old, self._aside = self._aside, read
        if old is not None:
            old.release()
        if committed:
            return FetchResult(ErrorCode.NONE, max(self._high_watermark, read.fetch_offset), read.fetch_offset,
                               self._log_start_offset, aborted_transactions=())
        return FetchResult(ErrorCode.NONE, read.fetch_offset, min(self._last_stable_offset, read.fetch_offset),
                           self._log_start_offset)

    def _take_aside(self, fetch_offset: int, max_bytes: int, read_committed: bool) -> "PendingRead | None":
        """The read set aside, or else the follow read, at `fetch_offset` of the same isolation,
        if it reads within `max_bytes` and still waits or holds data. A read set aside that does
        not is released (or was answered empty: its wait at the replica ran out); follow reads at
        other offsets stay for their own consumers."""
        aside, self._aside = self._aside, None
        if aside is not None:
            if _usable(aside, fetch_offset, max_bytes) and aside.read_committed == read_committed:
                # (built directly: dataclasses.replace costs more than the rest of a reused read)
                return PendingRead(aside.answer, self, aside.request_id, fetch_offset, aside.max_bytes, True,
                                   read_committed)
            aside.release()
        follow = self._follows.pop((fetch_offset, read_committed), None)
        if follow is not None:
            if _usable(follow, fetch_offset, max_bytes):
                return PendingRead(follow.answer, self, follow.request_id, fetch_offset, follow.max_bytes, True,
                                   read_committed)
            follow.release()
        return None

    def _followed(self, follow_id: int, fetch_offset: int, max_bytes: int, read_committed: bool) -> None:
        """The replica parked the follow read `follow_id` at `fetch_offset`: keep it for the next
        read there of its isolation (replacing one already there; the oldest is released beyond
        FOLLOW_SLOTS)."""
        future = self._expect(follow_id, self._read_answer_of(follow_id, max_bytes, read_committed), _LOST_READ)
        follow = PendingRead(future, self, follow_id, fetch_offset, max_bytes, False, read_committed)
        key = (fetch_offset, read_committed)
        old = self._follows.pop(key, None)
        if old is not None and old.request_id != follow_id:
            old.release()
        self._follows[key] = follow
        while len(self._follows) > FOLLOW_SLOTS:
            self._follows.pop(next(iter(self._follows))).release()

    def read_log_end(self, fetch_offset: int, max_bytes: int) -> Awaitable[FetchResult]:
        """Whole batches from `fetch_offset` up to the leader's log end rather than its high
        watermark: the broker's own read of a partition it has just come to lead, as Kafka's
        group coordinator loads `__consumer_offsets` (FetchIsolation.LOG_END). A new leader's
        high watermark lags its log end until its followers fetch again, and what lies between
        is committed data the new leader keeps. A lost replica answers NOT_LEADER_OR_FOLLOWER."""
        return self._submit_numbered([dc.encode_read(fetch_offset, max_bytes, 0, FetchIsolation.LOG_END)],
                                     self._read_answer, _LOST_READ)[1]

    async def replica_read(self, follower: int, leader_epoch: int, fetch_offset: int, max_bytes: int,
                           max_wait_ms: int = 0) -> FetchResult:
        """A follower's fetch (Fetch with a replica id): batches up to the leader's log end,
        and the note that `follower` has everything before `fetch_offset`. No windows: a
        follower's read moves the high watermark, so the replica must see each one."""
        return await self.start_replica_read(follower, leader_epoch, fetch_offset, max_bytes, max_wait_ms).answer

    def start_replica_read(self, follower: int, leader_epoch: int, fetch_offset: int, max_bytes: int,
                           max_wait_ms: int = 0) -> "PendingRead":
        """`replica_read`, as a `PendingRead` whose wait can be ended early."""
        request_id, future = self._submit_numbered(
            [dc.encode_replica_read(follower, leader_epoch, fetch_offset, max_bytes, max_wait_ms)],
            dc.decode_fetch_result, _LOST_READ)
        return PendingRead(future, self, request_id)

    async def follower_append(self, records: Any, leader_high_watermark: int,
                              leader_log_start_offset: int) -> FollowerAppendResult:
        """Hand a local follower replica the batches its leader answered a fetch with."""
        return await self._submit(dc.encode_follower_append(records, leader_high_watermark, leader_log_start_offset),
                                  dc.decode_follower_result, FollowerAppendResult(ErrorCode.NOT_LEADER_OR_FOLLOWER))

    def _read_answer_of(self, follow_id: int, max_bytes: int,
                        read_committed: bool = False) -> Callable[[memoryview], FetchResult]:
        """How a consumer's read with `follow_id` (0: none) is answered."""
        if not follow_id:
            return self._read_answer
        return lambda body: self._read_answer(body, follow_id, max_bytes, read_committed)

    def _read_answer(self, body: memoryview, follow_id: int = 0, max_bytes: int = 0,
                     read_committed: bool = False) -> FetchResult:
        """A consumer's read answered: open the window after its data, and keep its follow read
        if the replica parked one."""
        result = dc.decode_fetch_result(body)
        if follow_id and dc.fetch_result_followed(body):
            self._followed(follow_id, result.next_offset, max_bytes, read_committed)
        self._log_start_floor = max(self._log_start_floor, result.log_start_offset)
        if result.error is ErrorCode.NONE:
            self._high_watermark, self._log_start_offset = result.high_watermark, result.log_start_offset
            self._last_stable_offset = result.last_stable_offset
        if result.regions and result.committed_end >= 0:
            last = result.regions[-1]
            self._open_window(result.next_offset, _Window(
                last.path, last.inode, last.position + last.length, result.committed_end,
                result.high_watermark, result.last_stable_offset, result.log_start_offset, time.monotonic(),
                result.stable_window))
        return result

    def _open_window(self, offset: int, window: _Window) -> None:
        if window.position >= window.end:
            return
        while len(self._windows) >= WINDOW_SLOTS:
            del self._windows[next(iter(self._windows))]  # the oldest
        self._windows[offset] = window

    def _read_window(self, window: _Window, offset: int, max_bytes: int, read_committed: bool) -> FetchResult | None:
        """The next whole batches of `window` within `max_bytes` (the first one whatever its size,
        Kafka's rule), read here; None when the window is too old or its file was replaced. A
        read_committed read (of a stable window) reports no aborted transaction."""
        log_start_offset = max(window.log_start_offset, self._log_start_floor)
        if time.monotonic() - window.opened_at > WINDOW_MAX_AGE_S or offset < log_start_offset:
            return None
        try:
            fd = os.open(window.path, os.O_RDONLY)
        except OSError:
            return None
        try:
            if os.fstat(fd).st_ino != window.inode:
                return None
            length, next_offset = 0, offset
            for h in iter_headers(lambda size, position: os.pread(fd, size, position), window.position, window.end):
                if h.last_offset < next_offset or (length and length + h.size > max_bytes):
                    break  # (a batch behind the offset: the window is not what it claims)
                length += h.size
                next_offset = h.last_offset + 1
        except OSError:
            return None
        finally:
            os.close(fd)
        if not length:
            return None
        region = Region(window.path, window.position, length, window.inode)
        self._open_window(next_offset, replace(window, position=window.position + length))
        return FetchResult(ErrorCode.NONE, window.high_watermark, window.last_stable_offset, log_start_offset,
                           (region,), next_offset, window.end, () if read_committed else None, window.stable)

    @property
    def actor(self) -> Any:
        """The replica's actor handle, for the rare calls that are not on the data socket."""
        return actor_of(self._actor)

    def forget_windows(self) -> None:
        """Drop every window: the partition's log start or role may have changed meanwhile."""
        self._windows.clear()

    async def offset_for_leader_epoch(self, current_leader_epoch: int, leader_epoch: int) -> tuple[ErrorCode, int, int]:
        """OffsetForLeaderEpoch (a control call: once per leader change): (error, epoch, end offset)."""
        try:
            return await self.actor.offset_for_leader_epoch.remote(current_leader_epoch, leader_epoch)
        except Exception:  # noqa: BLE001 - the replica process is gone
            return ErrorCode.NOT_LEADER_OR_FOLLOWER, -1, -1

    def list_offset(self, timestamp: int, isolation_level: int = 0) -> Awaitable[OffsetLookup]:
        """Queue a ListOffsets lookup now, behind the appends already queued (see
        `encode_list_offset`). A lost replica answers NOT_LEADER_OR_FOLLOWER."""
        return self._submit([dc.encode_list_offset(timestamp, isolation_level)], dc.decode_offset_lookup,
                            OffsetLookup(ErrorCode.NOT_LEADER_OR_FOLLOWER))

    def write_txn_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool,
                         timeout_ms: int) -> Awaitable[ProduceResult]:
        """Queue a transaction coordinator's COMMIT (`commit`) or ABORT marker for `producer_id`
        now, in order with the appends around it; answered once the followers have it or
        `timeout_ms` passed (see `ServedPartition.write_txn_marker` for its refusals). A lost
        replica answers NOT_LEADER_OR_FOLLOWER."""
        return self._submit([dc.encode_txn_marker(producer_id, producer_epoch, coordinator_epoch, commit, timeout_ms)],
                            _decode_append, _LOST_APPEND)

    def delete_records(self, offset: int) -> Awaitable[DeleteRecordsResult]:
        """Queue a DeleteRecords now, in order with the requests around it (see
        `encode_delete_records`). A lost replica answers NOT_LEADER_OR_FOLLOWER. Windows are
        forgotten now, and the log start it reports raises their floor, so that no read queued
        after it is served below the new log start offset."""
        self.forget_windows()

        def deleted(body: memoryview) -> DeleteRecordsResult:
            result = dc.decode_deleted(body)
            self.forget_windows()   # (one opened by a read answered before it)
            self._log_start_floor = max(self._log_start_floor, result.low_watermark)
            return result
        return self._submit([dc.encode_delete_records(offset)], deleted,
                            DeleteRecordsResult(ErrorCode.NOT_LEADER_OR_FOLLOWER))

    async def drain(self, timeout_s: float) -> bool:
        """Release every parked read and wait until every request sent has its answer (the
        replica is about to close); False when some are still out after `timeout_s`."""
        for request_id in list(self._pending):
            self.release(request_id)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while self._pending:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            await asyncio.wait([future for future, _, _ in self._pending.values()], timeout=remaining)
        return True

    def close(self) -> None:
        if self._protocol is not None and self._protocol.transport is not None:
            self._protocol.transport.close()


def _usable(read: "PendingRead", fetch_offset: int, max_bytes: int) -> bool:
    """Whether a read under way (set aside, or a follow read) serves a new read at `fetch_offset`
    within `max_bytes`: it reads there, within that, and still waits or holds data."""
    answer = read.answer
    return read.fetch_offset == fetch_offset and read.max_bytes <= max_bytes and (
        not answer.done() or (not answer.cancelled() and bool(answer.result().regions)))


def _decode_append(body: memoryview) -> ProduceResult:
    return dc.decode_produce_results(body)[0]


@dataclass(frozen=True)
class PendingRead:
    """A read under way at a replica: its answer, and while it may be parked waiting for data,
    `release()` makes the replica answer it now (request id 0: answered without the replica)."""

    answer: asyncio.Future
    channel: ReplicaChannel
    request_id: int
    fetch_offset: int = -1   # a consumer's read (-1: a follower's, never set aside)
    max_bytes: int = 0
    reused: bool = False     # set aside by an earlier fetch: its wait at the replica began then
    read_committed: bool = False

    def release(self) -> None:
        if self.request_id and not self.answer.done():
            self.channel.release(self.request_id)

    def set_aside(self) -> FetchResult | None:
        """Leave it parked for the next fetch (see `ReplicaChannel.set_aside`): what its fetch
        answers for the partition now, or None when it must be released."""
        if self.fetch_offset < 0 or not self.request_id or self.answer.done():
            return None
        return self.channel.set_aside(self)


ReadOn = Callable[[int, FetchResult], "PendingRead | None"]


async def await_fetch(reads: list[PendingRead], min_bytes: int, max_wait_ms: int,
                      complete_now: bool = False, read_on: ReadOn | None = None) -> list[FetchResult]:
    """The answers of a fetch's partition reads (one per partition, merged), as Kafka's
    DelayedFetch completes a fetch: once the partitions hold `min_bytes` (at least one byte)
    between them, one answered with an error, `complete_now` (another partition of the fetch
    has an error) or `max_wait_ms` passed.

    While the fetch is short of `min_bytes`, a partition whose read came back with data reads
    on from where it ended (`read_on(index, what it has so far)`, None when it may not: its
    size limit is reached, or the read is a follower's, whose fetch offset is its log end), so
    data that arrives on any partition counts. When the fetch completes, a consumer's read still
    parked at the end of its log is set aside for the next fetch at that offset (`set_aside`:
    its partition answers no data now); the other reads still parked are released: they answer
    at once with what their replica has, and none stays parked behind the answer (a follower's
    stale read would otherwise note an old fetch offset later)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max_wait_ms / 1000
    target = max(min_bytes, 1)
    current: list[PendingRead | None] = list(reads)   # each partition's read under way
    merged: list[FetchResult | None] = [None] * len(reads)
    index_of = {r.answer: i for i, r in enumerate(reads)}
    ready = 0
    while not complete_now and ready < target:
        done = {f for f in index_of if f.done()}
        if not done:
            remaining = deadline - loop.time()
            if not index_of or remaining <= 0:
                break
            done, _ = await asyncio.wait(set(index_of), timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
            if not done:
                break
        for f in done:
            i = index_of.pop(f)
            result = f.result()
            merged[i] = result if merged[i] is None else _read_on_from(merged[i], result)
            finished, current[i] = current[i], None
            ready += result.size
            if result.error is not ErrorCode.NONE:
                complete_now = True
            elif ready < target and read_on is not None and (result.regions or finished.reused):
                # (a reused read answers empty when its wait at the replica, begun by an earlier
                # fetch, ran out: this fetch waits on, with a read of its own)
                following = read_on(i, merged[i])
                if following is not None:
                    current[i] = following
                    index_of[following.answer] = i
    under_way = []
    for i, r in enumerate(current):
        if r is None:
            continue
        aside = r.set_aside()
        if aside is None:
            r.release()
            under_way.append((i, r))
        elif merged[i] is None:
            merged[i] = aside
    for i, r in under_way:
        result = await r.answer
        merged[i] = result if merged[i] is None else _read_on_from(merged[i], result)
    return merged


def _read_on_from(first: FetchResult, then: FetchResult) -> FetchResult:
    """One partition's answer from a read and the read that went on where it ended. A later
    read that failed leaves the data already read (the client meets the error next time)."""
    if then.error is not ErrorCode.NONE:
        return first
    if not then.regions:
        return replace(first, high_watermark=then.high_watermark, last_stable_offset=then.last_stable_offset,
                       log_start_offset=then.log_start_offset)
    aborted = first.aborted_transactions
    if then.aborted_transactions is not None:   # (read_committed: both reads' aborts, each once)
        aborted = tuple(dict.fromkeys((aborted or ()) + then.aborted_transactions))
    return FetchResult(ErrorCode.NONE, then.high_watermark, then.last_stable_offset, then.log_start_offset,
                       first.regions + then.regions, then.next_offset, then.committed_end, aborted)
