"""Reading length-prefixed frames from a socket straight into a buffer of the frame's size.

asyncio's StreamReader copies every byte twice (into its buffer, then out of it) and
memmoves the remainder on each read; with megabyte produce requests that was the largest
cost of the front end and the replicas. `FramedProtocol` uses `BufferedProtocol`: the
kernel writes each frame's body directly into a bytearray allocated for it, which the
handler then owns (writable, so offsets can be rewritten in place).

It also gives writers flow control (`drain`) and lets the owner stop reading while too
much work is queued (`pause_reading` / `resume_reading` on the transport).

Small frames would cost two reads each (the header, then the body), and a turn of the event
loop per read. So, without a gate, the header is read into a staging buffer together with
whatever follows it: every frame that arrived whole in it is handed on from there, and only
a body that did not fit is read on into its own buffer (what arrived of it is copied there).

With a `ReadGate` (the Kafka listener's), body bytes are read only as the gate grants them,
and a body is allocated whole only when the gate grants it whole; otherwise its buffer grows
with the bytes that arrive, so a length prefix alone costs no memory.
"""
from __future__ import annotations

import asyncio
from typing import Callable, Protocol

GROW_BYTES = 64 * 1024  # the smallest step of a body buffer that grows as bytes arrive
STAGE_BYTES = 64 * 1024  # read at once while no body is being read (ungated protocols)


class FrameError(Exception):
    """A frame header announced an impossible length; the connection must be closed."""


class ReadGate(Protocol):
    def grant(self, length: int, got: int) -> int:
        """How many more body bytes of a frame of `length` (`got` read so far) may be read now:
        at least 1. A gate that wants no more pauses the transport's reading itself (on
        uvloop once the current read is handled: its transports crash when reading stops
        inside `get_buffer`) and grants a byte to each read until then."""


class FramedProtocol(asyncio.BufferedProtocol):
    """Calls `on_frame(head, body)` for every frame read, in order.

    With `reuse_buffer`, `body` is a view of one buffer that the next frame overwrites, so
    `on_frame` must be finished with it when it returns; otherwise it is a new bytearray.

    `head_size` bytes of header come first; `body_length(head)` says how many body bytes
    follow (raising FrameError to refuse the frame, which closes the connection). With a
    `gate`, body bytes are read as it grants them (see the module docstring).
    """

    def __init__(self, head_size: int, body_length: Callable[[bytes], int],
                 on_frame: Callable[[bytes, bytearray | memoryview], None], *, reuse_buffer: bool = False,
                 gate: ReadGate | None = None) -> None:
        self._head = bytearray(head_size)
        self._body_length = body_length
        self.on_frame = on_frame
        # A fresh megabyte buffer per frame costs page faults (kernel time) on every frame;
        # a handler that is done with the body when `on_frame` returns can share one.
        self._scratch = bytearray(1 << 16) if reuse_buffer else None
        self._body: bytearray | memoryview | None = None
        self._got = 0
        self._length = 0     # of the body being read
        self._gate = gate
        # Ungated: headers (and the frames after them) are read here; `_staged` bytes are in it.
        self._stage = bytearray(max(STAGE_BYTES, head_size)) if gate is None else None
        self._staged = 0
        self._allowed = 0    # body bytes the gate has granted
        self.bytes_read = 0  # everything read so far (idle connections are found by it)
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
            if self._stage is not None:
                return memoryview(self._stage)[self._staged:]
            return memoryview(self._head)[self._got:]
        if self._gate is None:
            return memoryview(self._body)[self._got:]
        if self._got == self._allowed:
            self._allowed += self._gate.grant(self._length, self._got)
        if len(self._body) == self._got:
            self._grow()
        return memoryview(self._body)[self._got:self._allowed]

    def _grow(self) -> None:
        """Room for the next bytes of a gated body: all of it at once when the gate granted the
        whole frame at its start, else a quarter more than has arrived (within the grant), so
        the buffer's pages stay within about 1.25x the bytes received. Growing a large buffer
        costs no copy where realloc can remap its pages."""
        body = self._body
        assert isinstance(body, bytearray)
        if self._got == 0 and self._allowed == self._length:
            self._body = bytearray(self._length)
            return
        size = min(self._allowed, self._got + max(GROW_BYTES, self._got // 4))
        body += bytes(size - len(body))

    def buffer_updated(self, nbytes: int) -> None:
        self.bytes_read += nbytes
        if self._body is None and self._stage is not None:
            self._staged += nbytes
            self._take_staged()
            return
        self._got += nbytes
        if self._body is None:   # (gated: the header is read on its own)
            if self._got < len(self._head):
                return
            try:
                length = self._body_length(bytes(self._head))
            except FrameError as e:
                self.on_refused(e)
                self.transport.close()
                return
            self._length = length
            self._body, self._allowed = bytearray(), 0
            self._got = 0
            if length:
                return
        elif self._got < self._length:
            return
        head, body = bytes(self._head), self._body
        self._body, self._got = None, 0
        self.on_frame(head, body)

    def _take_staged(self) -> None:
        """Hand on every whole frame in the staging buffer; a frame whose body has not all
        arrived gets its own buffer with what did, and reading goes on into it."""
        stage, head_size = self._stage, len(self._head)
        view = memoryview(stage)
        at, end = 0, self._staged
        try:
            while end - at >= head_size and self.transport is not None and not self.transport.is_closing():
                head = bytes(view[at:at + head_size])
                try:
                    length = self._body_length(head)
                except FrameError as e:
                    self.on_refused(e)
                    self.transport.close()
                    return
                body_at = at + head_size
                if end - body_at >= length:   # the whole frame is here
                    at = body_at + length
                    self.on_frame(head, view[body_at:at] if self._scratch is not None else bytearray(view[body_at:at]))
                    continue
                self._head[:] = head
                self._length = length
                self._body = self._new_body(length)
                self._got = end - body_at
                self._body[:self._got] = view[body_at:end]
                at = end
                break
            rest = end - at
            if rest and at:
                stage[:rest] = view[at:end]   # (a header cut short: its start moves to the front)
            self._staged = rest
        finally:
            view.release()

    def _new_body(self, length: int) -> bytearray | memoryview:
        """A buffer for a body of `length` bytes: its own, or the shared one (`reuse_buffer`)."""
        if self._scratch is None:
            return bytearray(length)
        if len(self._scratch) < length:
            self._scratch = bytearray(max(length, 2 * len(self._scratch)))
        return memoryview(self._scratch)[:length]

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

    def writable(self) -> bool:
        """Whether a write now goes out without waiting: connected, not closing, and the
        transport's buffer below its high-water mark."""
        transport = self.transport
        return transport is not None and self._can_write.is_set() and not transport.is_closing()

    async def drain(self) -> None:
        """Wait until the transport's write buffer is below its high-water mark."""
        if self.transport is None or self.transport.is_closing():
            raise ConnectionError("connection closed")
        await self._can_write.wait()
        if self.transport.is_closing():
            raise ConnectionError("connection closed")
