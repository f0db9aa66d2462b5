"""The front end's path to the partition replicas on its own broker.

A plain Ray actor call costs 1.4–2.2 ms round trip, one caller reaches about 1,800
calls/s, and an argument over 100 KiB goes through Ray's object store: measured here, a
produce of 6 × 100 KiB batches took 28 ms as actor calls. So the hot path does not use
actor calls. Each leader replica listens on a Unix domain socket (`data_channel.py`);
its `ReplicaChannel` keeps one connection to it and pipelines: appends are written as
they arrive (the socket keeps their order, and the replica applies them in that order),
reads are answered by request id so a parked read holds nothing up. Fetch answers are
file regions, never the bytes: the front end sends them to the client with sendfile.

A consumer's next fetch starts where the last answer ended. A replica's answer says where
the committed whole batches end in the file of its last region, so when a consumer works
through a backlog (each answer cut off by its size limit), the channel reads on from where
the last answer ended up to there itself: it walks the batch headers in the file and answers
with the next region, without waking the replica (0.2–0.35 ms of a core per read here, the
processes taking turns on the cores). Committed batches never change, so such a window stays
right while its file does: it is used only by a read at its exact offset, while young, and
while its path still names the same file (retention, DeleteRecords and compaction swaps
rename or replace segment files); otherwise, and once the window is used up, the read goes
to the replica, whose answer opens the next window.

Ray actor calls remain for the rare control-like requests (ListOffsets, DeleteRecords).
"""
from __future__ import annotations

import asyncio
import itertools
import logging
import os
import time
from dataclasses import dataclass, replace
from typing import Any, Awaitable, Callable

from rafka.common.errors import ErrorCode
from rafka.common.frames import FramedProtocol
from rafka.partition_worker import data_channel as dc
from rafka.partition_worker.messages import (DeleteRecordsResult, FetchResult, FollowerAppendResult, OffsetLookup,
                                             ProduceResult, Region)
from rafka.partition_worker.segment_reader import iter_headers

log = logging.getLogger(__name__)

# A window older than this is not used: the high watermark and log start it reports would be stale.
WINDOW_MAX_AGE_S = 0.5
# Windows kept per partition (one per consumer reading it at its own position).
WINDOW_SLOTS = 4


@dataclass(frozen=True)
class _Window:
    """Committed whole batches from `position` to `end` in one segment file, starting at an
    offset the channel keys it by; with the watermarks of the answer it came from."""

    path: str
    inode: int
    position: int
    end: int
    high_watermark: int
    log_start_offset: int
    opened_at: float


class ReplicaChannel:
    """Appends to and reads from one local leader replica over its data socket.

    Requests are queued for the socket at the moment `append` or `read` is *called*, not
    when the returned awaitable first runs, so two produce requests for one partition reach
    the replica in the order the front end read them from the client, even while the
    connection is still being opened.
    """

    def __init__(self, actor: Any, socket_path: str) -> None:
        self.actor = actor
        self.socket_path = socket_path
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[asyncio.Future, Callable[[memoryview], Any]]] = {}
        self._outbox: list[list] = []
        self._protocol: FramedProtocol | None = None
        self._sender: asyncio.Task | None = None
        self._windows: dict[int, _Window] = {}

    def _submit(self, parts: list, decode: Callable[[memoryview], Any]) -> asyncio.Future:
        """Queue one request (in call order) and return the future of its answer."""
        request_id = next(self._ids) & 0xFFFFFFFF
        future = asyncio.get_running_loop().create_future()
        self._pending[request_id] = (future, decode)
        length = 4 + sum(len(p) for p in parts)
        self._outbox.append([dc.FRAME_HEAD.pack(length, request_id), *parts])
        if self._sender is None or self._sender.done():
            self._sender = asyncio.ensure_future(self._send())
        return future

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
            future, decode = entry
            future.set_result(decode(memoryview(body)))

    def _on_closed(self, protocol: FramedProtocol) -> None:
        log.info("data connection to %s closed", self.socket_path)
        if self._protocol is protocol:
            self._protocol = None
        self._fail_pending()

    def _fail_pending(self) -> None:
        pending, self._pending = self._pending, {}
        for future, _ in pending.values():
            if not future.done():
                future.set_exception(ConnectionError("replica data connection lost"))

    def append(self, records: Any, acks: int, timeout_ms: int = 0) -> Awaitable[ProduceResult]:
        """Queue an append now; await the result (with acks=all, once the followers have it or
        `timeout_ms` passed). A lost replica answers NOT_LEADER_OR_FOLLOWER."""
        return self._append_result(self._submit(dc.encode_append([records], acks, timeout_ms),
                                                dc.decode_produce_results))

    @staticmethod
    async def _append_result(future: asyncio.Future) -> ProduceResult:
        try:
            return (await future)[0]
        except (ConnectionError, OSError) as e:  # the client refreshes its metadata and retries
            return ProduceResult(ErrorCode.NOT_LEADER_OR_FOLLOWER, error_message=str(e))

    def read(self, fetch_offset: int, max_bytes: int, max_wait_ms: int = 0) -> Awaitable[FetchResult]:
        """Whole batches from `fetch_offset` up to `max_bytes`; with `max_wait_ms`, an empty
        answer first waits that long for an append. A lost replica answers NOT_LEADER_OR_FOLLOWER."""
        window = self._windows.pop(fetch_offset, None)
        if window is not None:
            result = self._read_window(window, fetch_offset, max_bytes)
            if result is not None:
                done = asyncio.get_running_loop().create_future()
                done.set_result(result)
                return done
        return self._read_result(self._submit([dc.encode_read(fetch_offset, max_bytes, max_wait_ms)],
                                              dc.decode_fetch_result))

    def read_log_end(self, fetch_offset: int, max_bytes: int) -> Awaitable[FetchResult]:
        """Whole batches from `fetch_offset` up to the leader's log end rather than its high
        watermark: the broker's own read of a partition it has just come to lead, as Kafka's
        group coordinator loads `__consumer_offsets` (FetchIsolation.LOG_END). A new leader's
        high watermark lags its log end until its followers fetch again, and what lies between
        is committed data the new leader keeps. A lost replica answers NOT_LEADER_OR_FOLLOWER."""
        return self._read_result(self._submit([dc.encode_read(fetch_offset, max_bytes, 0, up_to_log_end=True)],
                                              dc.decode_fetch_result))

    async def replica_read(self, follower: int, leader_epoch: int, fetch_offset: int, max_bytes: int,
                           max_wait_ms: int = 0) -> FetchResult:
        """A follower's fetch (Fetch with a replica id): batches up to the leader's log end,
        and the note that `follower` has everything before `fetch_offset`. No windows: a
        follower's read moves the high watermark, so the replica must see each one."""
        try:
            return await self._submit([dc.encode_replica_read(follower, leader_epoch, fetch_offset, max_bytes,
                                                              max_wait_ms)], dc.decode_fetch_result)
        except (ConnectionError, OSError):
            return FetchResult(ErrorCode.NOT_LEADER_OR_FOLLOWER)

    async def follower_append(self, records: Any, leader_high_watermark: int,
                              leader_log_start_offset: int) -> FollowerAppendResult:
        """Hand a local follower replica the batches its leader answered a fetch with."""
        try:
            return await self._submit(dc.encode_follower_append(records, leader_high_watermark,
                                                                leader_log_start_offset), dc.decode_follower_result)
        except (ConnectionError, OSError):
            return FollowerAppendResult(ErrorCode.NOT_LEADER_OR_FOLLOWER)

    async def _read_result(self, future: asyncio.Future) -> FetchResult:
        try:
            result = await future
        except (ConnectionError, OSError):
            return FetchResult(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        if result.regions and result.committed_end >= 0:
            last = result.regions[-1]
            self._open_window(result.next_offset, _Window(
                last.path, last.inode, last.position + last.length, result.committed_end,
                result.high_watermark, result.log_start_offset, time.monotonic()))
        return result

    def _open_window(self, offset: int, window: _Window) -> None:
        if window.position >= window.end:
            return
        while len(self._windows) >= WINDOW_SLOTS:
            del self._windows[next(iter(self._windows))]  # the oldest
        self._windows[offset] = window

    def _read_window(self, window: _Window, offset: int, max_bytes: int) -> FetchResult | None:
        """The next whole batches of `window` within `max_bytes` (the first one whatever its size,
        Kafka's rule), read here; None when the window is too old or its file was replaced."""
        if time.monotonic() - window.opened_at > WINDOW_MAX_AGE_S or offset < window.log_start_offset:
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
        return FetchResult(ErrorCode.NONE, window.high_watermark, window.high_watermark, window.log_start_offset,
                           (region,), next_offset, window.end)

    async def offset_for_leader_epoch(self, current_leader_epoch: int, leader_epoch: int) -> tuple[ErrorCode, int, int]:
        """OffsetForLeaderEpoch (a control call: once per leader change): (error, epoch, end offset)."""
        try:
            return await self.actor.offset_for_leader_epoch.remote(current_leader_epoch, leader_epoch)
        except Exception:  # noqa: BLE001 - the replica process is gone
            return ErrorCode.NOT_LEADER_OR_FOLLOWER, -1, -1

    async def list_offset(self, timestamp: int) -> OffsetLookup:
        return await self._call("list_offset", timestamp, OffsetLookup(ErrorCode.NOT_LEADER_OR_FOLLOWER))

    async def delete_records(self, offset: int) -> DeleteRecordsResult:
        return await self._call("delete_records", offset, DeleteRecordsResult(ErrorCode.NOT_LEADER_OR_FOLLOWER))

    async def _call(self, method: str, argument: Any, if_lost: Any) -> Any:
        """An actor call; `if_lost` when the replica process is gone (the client then
        refreshes its metadata and retries)."""
        try:
            return await getattr(self.actor, method).remote(argument)
        except Exception:  # noqa: BLE001 - the replica process is gone
            return if_lost

    def close(self) -> None:
        if self._protocol is not None and self._protocol.transport is not None:
            self._protocol.transport.close()
