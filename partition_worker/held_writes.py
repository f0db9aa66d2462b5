"""A replica's writes to one data connection, held while a frame of it is handled.

An append on a data connection usually wakes a read parked on the same connection (the
consumer's follow read, `data_channel`): its answer and the append's answer are written
together once the frame is handled, so the front end is woken once for both, and the replica
makes one write where it made two. Writes outside the handling of a frame of this connection
(a read woken by an append on another connection, an acks=all answer) go out at once.
"""
from __future__ import annotations

import asyncio


class HeldWrites:
    """Stands in for a data connection's transport (`write`, `is_closing`, `close`)."""

    __slots__ = ("transport", "_held")

    def __init__(self, transport: asyncio.WriteTransport) -> None:
        self.transport = transport
        self._held: list[bytes] | None = None

    def hold(self) -> None:
        """Hold writes from now until `release`."""
        self._held = []

    def release(self) -> None:
        """Send what was held, in the order written, in one write."""
        held, self._held = self._held, None
        if held and not self.transport.is_closing():
            self.transport.writelines(held)

    def write(self, data: bytes) -> None:
        if self._held is not None:
            self._held.append(data)
        else:
            self.transport.write(data)

    def is_closing(self) -> bool:
        return self.transport.is_closing()

    def close(self) -> None:
        self._held = None
        self.transport.close()
