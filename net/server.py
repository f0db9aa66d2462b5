"""The asyncio Kafka-protocol server: framing, size limits, and answers in arrival order.

A client may pipeline many requests on one connection. Each request is worked on in its
own task as soon as it is read, but responses are written strictly in the order the
requests arrived (Kafka's rule); a Produce with acks=0 gets no response and holds
nothing up. A malformed or oversized frame closes that connection and nothing else.
While more than `MAX_QUEUED_REQUESTS` requests of one connection wait, reading from it
pauses (backpressure instead of unbounded memory).

Frames are read by `FramedProtocol` straight into a buffer of their own size. Response
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
from typing import Any, Protocol

from rafka.common.errors import KafkaError
from rafka.common.frames import FrameError, FramedProtocol
from rafka.common.logging_util import Prefixed
from rafka.partition_worker.segment_reader import region_file_cache, region_key

log = logging.getLogger(__name__)

# Kafka's socket.request.max.bytes default (100 MiB).
DEFAULT_MAX_REQUEST_BYTES = 104857600
MAX_QUEUED_REQUESTS = 256
_SIZE = struct.Struct(">i")


class CloseConnection(Exception):
    """Raised by a handler when the only right answer is to drop the connection."""


class RequestHandler(Protocol):
    async def handle(self, frame: memoryview, peer: str) -> list | None:
        """Work on one request frame; return the response parts, or None for no response.

        Raising `CloseConnection` (or any protocol error) closes the connection.
        """


class _Connection:
    """One client connection: its frames in, its answers out in arrival order."""

    def __init__(self, server: "KafkaServer") -> None:
        self._server = server
        self._queue: deque[asyncio.Future] = deque()
        self._ready = asyncio.Event()
        self._paused = False
        self.peer = "?"
        self.protocol = FramedProtocol(4, self._body_length, self._on_frame)
        self.protocol.on_refused = self._on_refused  # type: ignore[method-assign]
        self._sender = asyncio.ensure_future(self._send_in_order())

    def _body_length(self, head: bytes) -> int:
        (size,) = _SIZE.unpack(head)
        if size <= 0 or size > self._server.max_request_bytes:
            raise FrameError(f"request size {size} outside 1..{self._server.max_request_bytes}")
        return size

    def _on_refused(self, error: FrameError) -> None:
        self._server.log.warning("closing %s: %s", self._peer(), error)

    def _peer(self) -> str:
        if self.peer == "?" and self.protocol.transport is not None:
            name = self.protocol.transport.get_extra_info("peername")
            self.peer = "%s:%s" % tuple(name[:2]) if name else "?"
            sock = self.protocol.transport.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return self.peer

    def _on_frame(self, head: bytes, body: bytearray) -> None:
        work = asyncio.ensure_future(self._server.handler.handle(memoryview(body), self._peer()))
        self._queue.append(work)
        self._ready.set()
        if len(self._queue) > MAX_QUEUED_REQUESTS and not self._paused:
            self._paused = True
            self.protocol.transport.pause_reading()

    async def _send_in_order(self) -> None:
        loop = asyncio.get_running_loop()
        protocol = self.protocol
        try:
            while True:
                while not self._queue:
                    if protocol.closed.done():
                        return
                    self._ready.clear()
                    ready = asyncio.ensure_future(self._ready.wait())
                    await asyncio.wait([ready, protocol.closed], return_when=asyncio.FIRST_COMPLETED)
                    ready.cancel()
                work = self._queue[0]
                try:
                    parts = await work
                except (CloseConnection, KafkaError) as e:
                    self._server.log.info("closing %s: %s", self._peer(), e)
                    return
                except Exception:
                    self._server.log.exception("closing %s after an unexpected error", self._peer())
                    return
                finally:
                    self._queue.popleft()
                if self._paused and len(self._queue) < MAX_QUEUED_REQUESTS // 2:
                    self._paused = False
                    protocol.transport.resume_reading()
                if parts is not None:
                    try:
                        await self._write(loop, parts)
                    except CloseConnection as e:
                        self._server.log.warning("closing %s: %s", self._peer(), e)
                        return
        except (ConnectionError, OSError) as e:
            self._server.log.debug("connection %s lost: %s", self._peer(), e)
        finally:
            for work in self._queue:
                work.cancel()  # requests behind a failure are abandoned with the connection
            self._queue.clear()
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
            transport.write(_SIZE.pack(sum(len(p) for p in parts)))
            opened = iter(files)
            for part in parts:
                part_regions = getattr(part, "regions", None)
                if part_regions is None:
                    transport.write(part)
                    continue
                for region in part_regions:
                    await _sendfile(loop, transport, next(opened), region.position, region.length)
            await self.protocol.drain()
        finally:
            cache.release(files)


async def _sendfile(loop: asyncio.AbstractEventLoop, transport: asyncio.Transport, f: Any, position: int,
                    length: int) -> None:
    """Send `length` bytes of `f` from `position` after what the transport has written.

    The socket usually takes a whole region at once: then one `os.sendfile` call does it,
    without `loop.sendfile`'s round of the event loop per region (writer registration,
    reading paused and resumed, file position restored). Whatever is left, or anything
    while the transport still holds unsent bytes, goes through `loop.sendfile`, which waits.
    """
    sock = transport.get_extra_info("socket")
    if sock is not None and transport.get_write_buffer_size() == 0:
        try:
            sent = os.sendfile(sock.fileno(), f.fileno(), position, length)
        except (BlockingIOError, InterruptedError):
            sent = 0
        position, length = position + sent, length - sent
    if length > 0:
        await loop.sendfile(transport, f, position, length, fallback=True)


class KafkaServer:
    """Serves one listener. `handler.handle` does the work; this class only moves bytes."""

    def __init__(self, handler: RequestHandler, *, host: str, port: int, broker_id: int,
                 max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES) -> None:
        self.handler = handler
        self._host, self._port = host, port
        self.max_request_bytes = max_request_bytes
        self._server: asyncio.base_events.Server | None = None
        self.files = region_file_cache()
        self.log = Prefixed(log, f"[Frontend broker={broker_id}]")
        self._connections: set[_Connection] = set()

    @property
    def port(self) -> int:
        assert self._server is not None
        return self._server.sockets[0].getsockname()[1]

    async def start(self) -> int:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(self._new_connection, self._host, self._port,
                                                reuse_address=True, backlog=512)
        return self.port

    def _new_connection(self) -> FramedProtocol:
        connection = _Connection(self)
        self._connections.add(connection)
        connection.protocol.closed.add_done_callback(lambda _: self._connections.discard(connection))
        return connection.protocol

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for connection in list(self._connections):
            if connection.protocol.transport is not None:
                connection.protocol.transport.close()
        self.files.close_all()
