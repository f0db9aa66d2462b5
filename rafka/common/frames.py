"""Reading length-prefixed frames from a socket straight into a buffer of the frame's size.

asyncio's StreamReader copies every byte twice (into its buffer, then out of it) and
memmoves the remainder on each read; with megabyte produce requests that was the largest
cost of the front end and the replicas. `FramedProtocol` uses `BufferedProtocol`: the
kernel writes each frame's body directly into a bytearray allocated for it, which the
handler then owns (writable, so offsets can be rewritten in place).

It also gives writers flow control (`drain`) and lets the owner stop reading while too
much work is queued (`pause_reading` / `resume_reading` on the transport).
"""
from __future__ import annotations

import asyncio
from typing import Callable


class FrameError(Exception):
    """A frame header announced an impossible length; the connection must be closed."""


class FramedProtocol(asyncio.BufferedProtocol):
    """Calls `on_frame(head, body)` for every frame read, in order.

    With `reuse_buffer`, `body` is a view of one buffer that the next frame overwrites, so
    `on_frame` must be finished with it when it returns; otherwise it is a new bytearray.

    `head_size` bytes of header come first; `body_length(head)` says how many body bytes
    follow (raising FrameError to refuse the frame, which closes the connection).
    """

    def __init__(self, head_size: int, body_length: Callable[[bytes], int],
                 on_frame: Callable[[bytes, bytearray | memoryview], None], *, reuse_buffer: bool = False) -> None:
        self._head = bytearray(head_size)
        self._body_length = body_length
        self.on_frame = on_frame
        # A fresh megabyte buffer per frame costs page faults (kernel time) on every frame;
        # a handler that is done with the body when `on_frame` returns can share one.
        self._scratch = bytearray(1 << 16) if reuse_buffer else None
        self._body: bytearray | memoryview | None = None
        self._got = 0
        self.transport: asyncio.Transport | None = None
        self._can_write = asyncio.Event()
        self._can_write.set()
        self.closed = asyncio.get_running_loop().create_future()

    def on_refused(self, error: FrameError) -> None:
        """A bad frame header; the default just closes the connection."""

    # -- asyncio.BufferedProtocol --------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._body is None:
            return memoryview(self._head)[self._got:]
        return memoryview(self._body)[self._got:]


    def buffer_updated(self, nbytes: int) -> None:
        self._got += nbytes
        if self._body is None:
            if self._got < len(self._head):
                return
            try:
                length = self._body_length(bytes(self._head))
            except FrameError as e:
                self.on_refused(e)
                self.transport.close()
                return
            if self._scratch is None:
                self._body = bytearray(length)
            else:
                if len(self._scratch) < length:
                    self._scratch = bytearray(max(length, 2 * len(self._scratch)))
                self._body = memoryview(self._scratch)[:length]
            self._got = 0
            if length:
                return
        elif self._got < len(self._body):
            return
        head, body = bytes(self._head), self._body
        self._body, self._got = None, 0
        self.on_frame(head, body)

    def eof_received(self) -> bool:
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self._can_write.set()
        if not self.closed.done():
            self.closed.set_result(exc)

    def pause_writing(self) -> None:
        self._can_write.clear()

    def resume_writing(self) -> None:
        self._can_write.set()

    async def drain(self) -> None:
        """Wait until the transport's write buffer is below its high-water mark."""
        if self.transport is None or self.transport.is_closing():
            raise ConnectionError("connection closed")
        await self._can_write.wait()
        if self.transport.is_closing():
            raise ConnectionError("connection closed")
