"""How many bytes of requests the front end holds: read from clients but not answered yet.

Kafka bounds this with `queued.max.request.bytes` (a memory pool every request body is taken
from, whole, as soon as its length is read) and by reading one request per connection at a
time. rafka reads a connection's requests while earlier ones are worked on (answers still go
out in order), so it keeps the accounts itself, per connection and for the whole front end:

- A request costs its body bytes, let in as they arrive, plus `overhead_bytes` for the task
  and objects that work on it. Nothing is charged for a length prefix alone, so a client that
  announces 100 MiB and sends nothing costs nothing (`FramedProtocol` grows a large body's
  buffer with what arrives).
- Body bytes are let in by grants. A frame of at most `eager_bytes` is granted whole (one
  allocation, the fast path) while the front end holds less than half its budget; a larger
  one, or any frame when memory is short, in pieces of `piece_bytes` or a quarter of what has
  arrived, so a partly sent request holds about 1.25x what it sent (as its buffer does). A piece is granted while the front end holds less than `limit_bytes`.
- When no piece can be granted the connection's reading pauses (it may take one more byte,
  which is charged) and it waits in line; answers free bytes and wake the waiters in order.
- A connection's first request (nothing else of it unanswered) of at most `small_bytes` is
  always let in: heartbeats, metadata, fetches and commits of every client go on while big
  requests wait, and a client cannot lock others out by filling the budget. Each connection
  adds at most that much beyond the budget.
- A connection starts reading a new request only while it has fewer than
  `max_queued_requests` unanswered and holds less than `connection_limit_bytes`.
- Partly read frames may fill the budget with no answer pending that could free it (several
  large requests arriving at once). Then the first waiter takes the one overdraft token: it
  reads its frame to the end whatever the budget; the token passes on when that frame is read.

So the front end holds at most `limit_bytes + piece_bytes` + one overdraft frame
(`socket.request.max.bytes`) + connections x (`small_bytes` + `overhead_bytes` + 1), and one
connection at most `connection_limit_bytes` + one frame. Pure bookkeeping: the server pauses
and resumes sockets through the `resume` callback each connection registers.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Callable

SMALL_BYTES = 64 * 1024        # a connection's first request up to this size is always let in
EAGER_BYTES = 2 * 1024 * 1024  # frames up to this size get one grant and one allocation (produce requests)
PIECE_BYTES = 64 * 1024        # the first piece of a larger frame, or of any frame when memory is short
OVERHEAD_BYTES = 2048          # what a request in flight costs beyond its body (task, futures, views)
UNBOUNDED = 1 << 62            # queued.max.request.bytes -1


class Wait(Enum):
    """Why a connection's reading is paused."""

    NONE = "reading"
    OWN = "its own unanswered requests"   # max_queued_requests or connection_limit_bytes
    SHARED = "the front end's budget"


@dataclass(eq=False)
class ConnectionShare:
    """One connection's account. `outstanding` counts every unanswered request of it, the
    frame being read included; `complete` those read whole."""

    resume: Callable[[], None]
    outstanding: int = 0
    complete: int = 0
    reading: bool = False     # a frame's body is being let in
    frame_cost: int = 0       # charged so far for that frame
    waiting: Wait = Wait.NONE
    closed: bool = False
    label: str = field(default="?", compare=False)


class RequestMemory:
    """The front end's account of request bytes held (see the module docstring). Not
    thread-safe: the front end's event loop owns it."""

    def __init__(self, limit_bytes: int, connection_limit_bytes: int, max_queued_requests: int, *,
                 small_bytes: int = SMALL_BYTES, eager_bytes: int = EAGER_BYTES, piece_bytes: int = PIECE_BYTES,
                 overhead_bytes: int = OVERHEAD_BYTES) -> None:
        self.limit_bytes = limit_bytes if limit_bytes > 0 else UNBOUNDED
        self.connection_limit_bytes = connection_limit_bytes
        self.max_queued_requests = max_queued_requests
        self.small_bytes = small_bytes
        self.eager_bytes = eager_bytes
        self.piece_bytes = piece_bytes
        self.overhead_bytes = overhead_bytes
        self.total = 0                 # bytes held by every connection
        self.complete = 0              # requests read whole and not answered, all connections
        self.token: ConnectionShare | None = None
        self._waiters: dict[ConnectionShare, None] = {}   # paused for the budget, in order
        self.peak = 0                  # the largest `total` seen (for tests and status)

    @property
    def waiting(self) -> int:
        """Connections paused for the budget."""
        return len(self._waiters)

    def open(self, resume: Callable[[], None], label: str = "?") -> ConnectionShare:
        """A new connection's account; `resume` is called when a paused connection may read again."""
        return ConnectionShare(resume, label=label)

    def may_start_frame(self, share: ConnectionShare) -> bool:
        """Whether `share` may read its next request now. False marks it waiting on its own
        requests: its reading must pause until `release` resumes it."""
        if share.complete < self.max_queued_requests and share.outstanding < self.connection_limit_bytes:
            return True
        share.waiting = Wait.OWN
        return False

    def grant(self, share: ConnectionShare, length: int, got: int) -> int:
        """Body bytes of a frame of `length` (`got` already let in) that `share` may read now,
        at least 1. When the budget allows nothing, `share` is marked waiting (its reading
        must pause) and the one byte the current read may still bring is granted."""
        if not share.reading:
            share.reading = True
            self._charge(share, self.overhead_bytes)
        remaining = length - got
        exempt = share.complete == 0 and length <= self.small_bytes
        if not (exempt or self.total < self.limit_bytes or self.token is share or remaining == 1):
            # (The last byte of a frame is never refused: it is the one byte a paused read may
            # still bring, and a frame read whole must not be left waiting.)
            if self.token is None and self.complete == 0 and not self._waiters:
                self.token = share   # nothing unanswered could free memory: this frame goes on regardless
            else:
                self._waiters[share] = None
                share.waiting = Wait.SHARED
                self._charge(share, 1)
                self._pass_token()
                return 1
        if exempt or (length <= self.eager_bytes and got == 0 and self.total + remaining <= self.limit_bytes // 2):
            n = remaining
        elif self.token is share:   # beyond the budget: still only as the bytes arrive
            n = min(remaining, max(self.piece_bytes, got // 4))
        else:
            n = min(remaining, max(self.piece_bytes, min(got // 4, self.limit_bytes - self.total)))
        self._charge(share, n)
        return n

    def frame_read(self, share: ConnectionShare) -> int:
        """`share` read a whole frame: returns what it cost, to `release` once it is answered."""
        cost, share.frame_cost, share.reading = share.frame_cost, 0, False
        share.complete += 1
        self.complete += 1
        if self.token is share:
            self.token = None
            self._pass_token()
        return cost

    def release(self, share: ConnectionShare, cost: int) -> None:
        """A request of `share` that cost `cost` was answered (or dropped): its bytes are free.
        Wakes `share` if it waited on its own requests, and waiters the budget now lets in."""
        if share.closed:
            return
        self.total -= cost
        share.outstanding -= cost
        share.complete -= 1
        self.complete -= 1
        if share.waiting is Wait.OWN and self.may_start_frame(share):
            share.waiting = Wait.NONE
            share.resume()
        self._wake()

    def close(self, share: ConnectionShare) -> None:
        """The connection is gone: everything it held is free. Idempotent."""
        if share.closed:
            return
        share.closed = True
        self.total -= share.outstanding
        self.complete -= share.complete
        share.outstanding = share.complete = share.frame_cost = 0
        self._waiters.pop(share, None)
        if self.token is share:
            self.token = None
        self._wake()

    # -- internals ---------------------------------------------------------------------
    def _charge(self, share: ConnectionShare, n: int) -> None:
        share.frame_cost += n
        share.outstanding += n
        self.total += n
        if self.total > self.peak:
            self.peak = self.total

    def _wake(self) -> None:
        """Resume waiters, oldest first, about as many as the free budget gives a piece to."""
        free = self.limit_bytes - self.total
        if free > 0 and self._waiters:
            for share in list(self._waiters)[:max(1, free // self.piece_bytes)]:
                del self._waiters[share]
                share.waiting = Wait.NONE
                share.resume()
        self._pass_token()

    def _pass_token(self) -> None:
        """Give the overdraft token to the oldest waiter when nothing unanswered can free memory."""
        if self.token is None and self.complete == 0 and self._waiters and self.total >= self.limit_bytes:
            share = next(iter(self._waiters))
            del self._waiters[share]
            self.token = share
            share.waiting = Wait.NONE
            share.resume()
