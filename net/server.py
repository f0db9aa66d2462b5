"""The asyncio Kafka-protocol server: framing, size limits, and answers in arrival order.

A client may pipeline many requests on one connection. Each request is worked on in its
own task as soon as it is read, but responses are written strictly in the order the
requests arrived (Kafka's rule); a Produce with acks=0 gets no response and holds
nothing up. A malformed or oversized frame closes that connection and nothing else.

Response parts are `bytes` or objects with `regions` (file regions of record batches),
which are sent with `os.sendfile` when the event loop supports it.
"""
from __future__ import annotations

import asyncio
import logging
import os
import struct
from collections import OrderedDict
from typing import Any, Awaitable, Callable, Protocol

from rafka.common.errors import KafkaError
from rafka.common.logging_util import Prefixed

log = logging.getLogger(__name__)

# Kafka's socket.request.max.bytes default (100 MiB).
DEFAULT_MAX_REQUEST_BYTES = 104857600
_SIZE = struct.Struct(">i")


class CloseConnection(Exception):
    """Raised by a handler when the only right answer is to drop the connection."""


class RequestHandler(Protocol):
    async def handle(self, frame: memoryview, peer: str) -> list | None:
        """Work on one request frame; return the response parts, or None for no response.

        Raising `CloseConnection` (or any protocol error) closes the connection.
        """


class FileCache:
    """A bounded cache of open segment files, for sendfile. Least recently used closes first."""

    def __init__(self, capacity: int = 256) -> None:
        self._capacity = capacity
        self._files: OrderedDict[str, Any] = OrderedDict()

    def get(self, path: str) -> Any:
        f = self._files.get(path)
        if f is not None:
            self._files.move_to_end(path)
            return f
        f = open(path, "rb", buffering=0)
        self._files[path] = f
        if len(self._files) > self._capacity:
            _, old = self._files.popitem(last=False)
            old.close()
        return f

    def close(self) -> None:
        for f in self._files.values():
            f.close()
        self._files.clear()


class KafkaServer:
    """Serves one listener. `handler.handle` does the work; this class only moves bytes."""

    def __init__(self, handler: RequestHandler, *, host: str, port: int, broker_id: int,
                 max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES) -> None:
        self._handler = handler
        self._host, self._port = host, port
        self._max_request_bytes = max_request_bytes
        self._server: asyncio.base_events.Server | None = None
        self._files = FileCache()
        self._log = Prefixed(log, f"[Frontend broker={broker_id}]")
        self._connections: set[asyncio.Task] = set()

    @property
    def port(self) -> int:
        assert self._server is not None
        return self._server.sockets[0].getsockname()[1]

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._serve, self._host, self._port,
                                                  reuse_address=True, limit=1 << 20, backlog=512)
        return self.port

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        self._files.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = "%s:%s" % writer.get_extra_info("peername")[:2]
        sock = writer.get_extra_info("socket")
        if sock is not None:
            import socket
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        pending: asyncio.Queue = asyncio.Queue()
        sender = asyncio.create_task(self._send_in_order(pending, writer, peer))
        self._connections.add(sender)
        try:
            while True:
                try:
                    head = await reader.readexactly(4)
                except (asyncio.IncompleteReadError, ConnectionError):
                    break
                (size,) = _SIZE.unpack(head)
                if size <= 0 or size > self._max_request_bytes:
                    self._log.warning("closing %s: request size %d outside 1..%d", peer, size,
                                      self._max_request_bytes)
                    break
                try:
                    frame = await reader.readexactly(size)
                except (asyncio.IncompleteReadError, ConnectionError):
                    break
                work = asyncio.ensure_future(self._handler.handle(memoryview(frame), peer))
                await pending.put(work)
        finally:
            await pending.put(None)  # the sender drains what is queued, then closes
            try:
                await sender
            except asyncio.CancelledError:
                pass
            self._connections.discard(sender)

    async def _send_in_order(self, pending: asyncio.Queue, writer: asyncio.StreamWriter, peer: str) -> None:
        loop = asyncio.get_running_loop()
        try:
            while True:
                work = await pending.get()
                if work is None:
                    break
                try:
                    parts = await work
                except (CloseConnection, KafkaError) as e:
                    self._log.info("closing %s: %s", peer, e)
                    break
                except Exception:
                    self._log.exception("closing %s after an unexpected error", peer)
                    break
                if parts is None:
                    continue
                await self._write(loop, writer, parts)
        except (ConnectionError, OSError) as e:
            self._log.debug("connection %s lost: %s", peer, e)
        finally:
            # Requests still queued behind a failure are abandoned with the connection.
            while not pending.empty():
                work = pending.get_nowait()
                if work is not None:
                    work.cancel()
            writer.close()

    async def _write(self, loop: asyncio.AbstractEventLoop, writer: asyncio.StreamWriter, parts: list) -> None:
        total = sum(len(p) for p in parts)
        writer.write(_SIZE.pack(total))
        for part in parts:
            regions = getattr(part, "regions", None)
            if regions is None:
                writer.write(part)
                continue
            for region in regions:
                await writer.drain()
                f = self._files.get(region.path)
                await loop.sendfile(writer.transport, f, region.position, region.length, fallback=True)
        await writer.drain()
