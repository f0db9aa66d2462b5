"""The asyncio Kafka-protocol server: framing, size limits, and answers in arrival order.

A client may pipeline many requests on one connection. Each request is worked on in its
own task as soon as it is read, but responses are written strictly in the order the
requests arrived (Kafka's rule); a Produce with acks=0 gets no response and holds
nothing up. A malformed or oversized frame closes that connection and nothing else.

Memory and connections are bounded as Kafka bounds them, with Kafka's config names
(`SocketServerSettings`): `RequestMemory` keeps the bytes of requests read but not answered
within `queued.max.request.bytes` for the front end and per connection (reading from a
connection pauses instead: backpressure), `ConnectionQuotas` applies `max.connections`
(accepting waits) and `max.connections.per.ip` (the extra connection is closed at once), and
a connection that moves no byte either way for `connections.max.idle.ms` is closed.

Frames are read by `FramedProtocol` straight into a buffer of their own size (or one that
grows with what arrives, for large frames or when memory is short). Response
parts are `bytes` or objects with `regions` (file regions of record batches), which are
sent with `os.sendfile` by the event loop. Every region's file is found (by path and inode,
see `partition_worker/segment_reader.py`) before the response's size is written: a segment
deleted for good in between closes that connection cleanly instead of sending a partial or
wrong frame, and the client reconnects and fetches again.
"""
from __future__ import annotations

import asyncio
import logging
import os
import socket
import struct
from collections import deque
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Protocol

from rafka.common.errors import KafkaError
from rafka.common.frames import FrameError, FramedProtocol
from rafka.common.logging_util import Prefixed
from rafka.net.connection_quotas import ConnectionQuotas
from rafka.net.request_memory import RequestMemory, Wait
from rafka.net.socket_settings import SocketServerSettings, resolve_overrides
from rafka.partition_worker.segment_reader import region_file_cache, region_key

log = logging.getLogger(__name__)

# Kafka's socket.request.max.bytes default (100 MiB).
DEFAULT_MAX_REQUEST_BYTES = 104857600
_SIZE = struct.Struct(">i")
LISTEN_BACKLOG = 512
# File regions up to this size go out read into the response's one write rather than by
# sendfile: a response in several writes wakes the client for each part (a consumer at the end
# of a log gets a fetch response a record long per record), and a copy this small costs less
# than the syscalls saved.
INLINE_REGION_BYTES = 16 * 1024
# What a region's rest is copied in, on event loops without sendfile (uvloop), each piece
# written once the transport has room for it.
SENDFILE_COPY_BYTES = 256 * 1024


class CloseConnection(Exception):
    """Raised by a handler when the only right answer is to drop the connection."""


class RequestHandler(Protocol):
    async def handle(self, frame: memoryview, peer: str) -> list | None:
        """Work on one request frame; return the response parts, or None for no response.

        Raising `CloseConnection` (or any protocol error) closes the connection.
        """


class _Connection:
    """One client connection: its frames in (as its `RequestMemory` share allows), its answers
    out in arrival order. It is the `ReadGate` of its `FramedProtocol`."""

    def __init__(self, server: "KafkaServer", peer: str) -> None:
        self._server = server
        self._memory = server.memory
        self._queue: deque[tuple[asyncio.Future, int]] = deque()   # (work, its cost in the memory account)
        self._wakeup: asyncio.Future | None = None   # set when a frame arrives for an idle sender
        self.peer = peer
        self.share = self._memory.open(self._resume, label=peer)
        self.protocol = FramedProtocol(4, self._body_length, self._on_frame, gate=self)
        self.protocol.on_refused = self._on_refused  # type: ignore[method-assign]
        self.protocol.closed.add_done_callback(self._wake_sender)
        self.bytes_written = 0
        self._moved = 0           # bytes read + written when the idle check last saw a change
        self._active_at = asyncio.get_running_loop().time()
        self._sender = asyncio.ensure_future(self._send_in_order())

    def _body_length(self, head: bytes) -> int:
        (size,) = _SIZE.unpack(head)
        if size <= 0 or size > self._server.max_request_bytes:
            raise FrameError(f"request size {size} outside 1..{self._server.max_request_bytes}")
        return size

    def _on_refused(self, error: FrameError) -> None:
        self._server.log.warning("closing %s: %s", self.peer, error)

    # -- ReadGate, and pausing ---------------------------------------------------------
    def grant(self, length: int, got: int) -> int:
        n = self._memory.grant(self.share, length, got)
        if self.share.waiting is not Wait.NONE:
            loop = asyncio.get_running_loop()
            if isinstance(loop, asyncio.BaseEventLoop):
                self._pause()
            else:
                # Not here and now: this runs inside the transport's get_buffer, and uvloop
                # (Ray's event loop in its workers) crashes when reading stops there. After this
                # read the share may have been let in again: then reading goes on.
                loop.call_soon(self._pause_if_waiting)
        return n

    def _pause_if_waiting(self) -> None:
        if self.share.waiting is not Wait.NONE:
            self._pause()

    def _pause(self) -> None:
        transport = self.protocol.transport
        if transport is not None:
            transport.pause_reading()

    def _resume(self) -> None:
        transport = self.protocol.transport
        if transport is not None and not transport.is_closing():
            transport.resume_reading()

    def idle_for(self, now: float) -> float:
        """Seconds since a byte last moved either way (as of the previous call's `now`)."""
        moved = self.protocol.bytes_read + self.bytes_written
        if moved != self._moved:
            self._moved, self._active_at = moved, now
        return now - self._active_at

    def _on_frame(self, head: bytes, body: bytearray) -> None:
        cost = self._memory.frame_read(self.share)
        work = asyncio.ensure_future(self._server.handler.handle(memoryview(body), self.peer))
        self._queue.append((work, cost))
        self._wake_sender()
        if not self._memory.may_start_frame(self.share):
            self._pause()

    def _wake_sender(self, _: object = None) -> None:
        """A frame came, or the connection closed: an idle sender looks again."""
        wakeup = self._wakeup
        if wakeup is not None and not wakeup.done():
            wakeup.set_result(None)

    async def _send_in_order(self) -> None:
        loop = asyncio.get_running_loop()
        protocol = self.protocol
        try:
            while True:
                while not self._queue:
                    if protocol.closed.done():
                        return
                    # (a plain future, woken by the next frame or the close: no task per wait)
                    self._wakeup = loop.create_future()
                    try:
                        await self._wakeup
                    finally:
                        self._wakeup = None
                work, cost = self._queue[0]
                try:
                    parts = await work
                except (CloseConnection, KafkaError) as e:
                    self._server.log.info("closing %s: %s", self.peer, e)
                    return
                except Exception:
                    self._server.log.exception("closing %s after an unexpected error", self.peer)
                    return
                finally:
                    self._queue.popleft()
                try:
                    if parts is not None:
                        await self._write(loop, parts)
                except CloseConnection as e:
                    self._server.log.warning("closing %s: %s", self.peer, e)
                    return
                finally:
                    self._memory.release(self.share, cost)   # answered (or given up): its bytes are free
        except (ConnectionError, OSError) as e:
            self._server.log.debug("connection %s lost: %s", self.peer, e)
        finally:
            for work, _ in self._queue:
                work.cancel()  # requests behind a failure are abandoned with the connection
            self._queue.clear()
            self._memory.close(self.share)
            if protocol.transport is not None:
                protocol.transport.close()

    async def _write(self, loop: asyncio.AbstractEventLoop, parts: list) -> None:
        transport = self.protocol.transport
        if transport is None or transport.is_closing():
            raise ConnectionError("connection closed")
        # Find every file before the first byte goes out: a frame is sent whole or not at all.
        regions = [r for part in parts for r in getattr(part, "regions", None) or ()]
        cache = self._server.files
        files = cache.acquire([region_key(r) for r in regions]) if regions else []
        if files is None:
            raise CloseConnection("a segment file of the fetch response was deleted before it could be sent")
        try:
            self.bytes_written += sum(len(p) for p in parts) + 4
            for step in response_writes(parts, files):
                if isinstance(step, bytes):
                    transport.write(step)
                else:
                    await _sendfile(loop, transport, *step, drain=self.protocol.drain)
            await self.protocol.drain()
        finally:
            cache.release(files)


def response_writes(parts: list, files: list) -> Iterator[bytes | tuple[Any, int, int]]:
    """A response frame (`parts`, their file regions open in `files`, in order) as the writes
    that send it: its bytes joined into one write up to each region too big to inline
    (INLINE_REGION_BYTES), which goes as (file, position, length) for sendfile."""
    ahead: list = [_SIZE.pack(sum(len(p) for p in parts))]
    opened = iter(files)
    for part in parts:
        part_regions = getattr(part, "regions", None)
        if part_regions is None:
            ahead.append(part)
            continue
        for region in part_regions:
            f = next(opened)
            if region.length <= INLINE_REGION_BYTES:
                ahead.append(_read_region(f, region.position, region.length))
                continue
            if ahead:
                yield b"".join(ahead)
                ahead = []
            yield f, region.position, region.length
    if ahead:
        yield b"".join(ahead)


def _read_region(f: Any, position: int, length: int) -> bytes:
    """The bytes of a small region of an open segment file, all of them or CloseConnection
    (the frame's length is already promised)."""
    data = os.pread(f.fileno(), length, position)
    if len(data) != length:
        raise CloseConnection(f"a segment file of the fetch response ended {length - len(data)} bytes short")
    return data


async def _sendfile(loop: asyncio.AbstractEventLoop, transport: asyncio.Transport, f: Any, position: int,
                    length: int, *, drain: Callable[[], Awaitable[None]]) -> None:
    """Send `length` bytes of `f` from `position` after what the transport has written.

    The socket usually takes a whole region at once: then one `os.sendfile` call does it,
    without `loop.sendfile`'s round of the event loop per region (writer registration,
    reading paused and resumed, file position restored). Whatever is left, or anything
    while the transport still holds unsent bytes, goes through `loop.sendfile`, which waits;
    on a loop without it (uvloop, which Ray installs in its workers when it is there) it is
    copied in pieces of SENDFILE_COPY_BYTES, each once `drain` says the transport has room.
    """
    sock = transport.get_extra_info("socket")
    if sock is not None and transport.get_write_buffer_size() == 0:
        try:
            sent = os.sendfile(sock.fileno(), f.fileno(), position, length)
        except (BlockingIOError, InterruptedError):
            sent = 0
        position, length = position + sent, length - sent
    if length > 0 and isinstance(loop, asyncio.BaseEventLoop):
        await loop.sendfile(transport, f, position, length, fallback=True)
        return
    while length > 0:
        piece = os.pread(f.fileno(), min(length, SENDFILE_COPY_BYTES), position)
        if not piece:
            raise CloseConnection(f"a segment file of the fetch response ended {length} bytes short")
        transport.write(piece)
        position, length = position + len(piece), length - len(piece)
        await drain()


class KafkaServer:
    """Serves one listener. `handler.handle` does the work; this class moves bytes and keeps
    connections and request memory within `settings`."""

    def __init__(self, handler: RequestHandler, *, host: str, port: int, broker_id: int,
                 settings: SocketServerSettings | None = None) -> None:
        self.handler = handler
        self._host, self._port = host, port
        self.settings = settings or SocketServerSettings()
        self.max_request_bytes = self.settings.max_request_bytes
        # Per connection: one largest request's worth, as Kafka reads one request at a time.
        self.memory = RequestMemory(self.settings.queued_max_request_bytes, self.settings.max_request_bytes,
                                    self.settings.queued_max_requests)
        self.quotas = ConnectionQuotas(self.settings.max_connections, self.settings.max_connections_per_ip)  # see start
        self._listeners: list[socket.socket] = []
        self._tasks: list[asyncio.Task] = []
        self._slot_freed = asyncio.Event()
        self.files = region_file_cache()
        self.log = Prefixed(log, f"[Frontend broker={broker_id}]")
        self._connections: set[_Connection] = set()

    @property
    def port(self) -> int:
        assert self._listeners
        return self._listeners[0].getsockname()[1]

    @property
    def connection_count(self) -> int:
        return len(self._connections)

    async def start(self) -> int:
        """Bind the listener (every address `host` resolves to, as asyncio's create_server)
        and start accepting; returns the bound port."""
        loop = asyncio.get_running_loop()
        if self.settings.max_connections_per_ip_overrides:
            overrides = await asyncio.to_thread(resolve_overrides, self.settings.max_connections_per_ip_overrides)
            self.quotas = ConnectionQuotas(self.settings.max_connections, self.settings.max_connections_per_ip,
                                           overrides)
        infos = await loop.getaddrinfo(self._host or None, self._port, type=socket.SOCK_STREAM,
                                       flags=socket.AI_PASSIVE)
        port = self._port
        addresses = list(dict.fromkeys((family, address[:2]) for family, *_, address in infos))
        for family, address in addresses:
            sock = socket.socket(family, socket.SOCK_STREAM)
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if family == socket.AF_INET6:
                    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                sock.bind((address[0], port))
                sock.listen(LISTEN_BACKLOG)
                sock.setblocking(False)
            except OSError:
                sock.close()
                raise
            port = sock.getsockname()[1]   # port 0: every address on the port the first one got
            self._listeners.append(sock)
        self._tasks = [asyncio.ensure_future(self._accept(sock)) for sock in self._listeners]
        if self.settings.connections_max_idle_ms >= 0:
            self._tasks.append(asyncio.ensure_future(self._close_idle(self.settings.connections_max_idle_ms / 1000)))
        return self.port

    async def _accept(self, listener: socket.socket) -> None:
        """Accept connections while fewer than max.connections are open (Kafka's acceptor waits
        for a slot; the kernel's backlog holds the next ones meanwhile) and close at once one
        over its address's max.connections.per.ip."""
        loop = asyncio.get_running_loop()
        while True:
            while self.quotas.at_max():
                self._slot_freed.clear()
                await self._slot_freed.wait()
            try:
                sock, address = await loop.sock_accept(listener)
            except OSError as e:   # out of file descriptors, say: the others go on; try again shortly
                self.log.warning("accepting a connection failed: %s", e)
                await asyncio.sleep(0.1)
                continue
            ip = address[0]
            if not self.quotas.admit(ip):
                self.log.info("Rejected connection from %s, address already has the configured maximum of %d "
                              "connections.", ip, self.quotas.limit_of(ip))
                sock.close()
                continue
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                peer = "%s:%s" % (ip, address[1]) if ":" not in ip else "[%s]:%s" % (ip, address[1])
                connection = _Connection(self, peer)
                self._connections.add(connection)
                connection.protocol.closed.add_done_callback(lambda _, c=connection, ip=ip: self._closed(c, ip))
                await loop.connect_accepted_socket(lambda c=connection: c.protocol, sock)
            except (OSError, RuntimeError) as e:
                self.log.debug("connection from %s lost before it started: %s", ip, e)
                sock.close()
                connection.protocol.connection_lost(e)   # its accounts are closed with it

    def _closed(self, connection: _Connection, ip: str) -> None:
        self._connections.discard(connection)
        self.memory.close(connection.share)
        self.quotas.closed(ip)
        self._slot_freed.set()

    async def _close_idle(self, idle_s: float) -> None:
        """Close connections that moved no byte for connections.max.idle.ms (Kafka's Selector
        closes them the same way, whatever they wait for)."""
        loop = asyncio.get_running_loop()
        interval = max(0.01, min(idle_s / 10, 30.0))
        while True:
            await asyncio.sleep(interval)
            now = loop.time()
            for connection in list(self._connections):
                if connection.idle_for(now) > idle_s and connection.protocol.transport is not None:
                    self.log.debug("closing %s: idle for more than %d ms", connection.peer,
                                   self.settings.connections_max_idle_ms)
                    connection.protocol.transport.close()

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for sock in self._listeners:
            sock.close()
        self._listeners.clear()
        for connection in list(self._connections):
            if connection.protocol.transport is not None:
                connection.protocol.transport.close()
        self.files.close_all()
