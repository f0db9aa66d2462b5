"""When a replica may be put to rest: idle long enough, and no append inside the clients' retry horizon.

A replica at rest has no process (its actor exits after a clean close); the broker rests one
after `replica.dormant.after.ms` without writes, or early, the idlest first, to make room under
`replica.max.live.processes`. "Quiet" used to mean only "nothing under way, the high watermark
at the log end": a replica could then rest a quarter of a second after an append whose answer
was lost on its way to the producer, and the producer's retry, sent up to its
`request.timeout.ms` plus `retry.backoff.ms` later (30000 + 100 ms with Kafka's client
defaults), found the partition resting or waking (issue 56). So a replica that appended within
`replica.dormant.retry.horizon.ms` reports itself as not idle at all: neither the dormancy
timer nor a room-making round picks it, and a wake that waits for room goes over the cap
instead, as it does when every replica is busy. It says how long until it may rest (a
negative idle time), so that a wake goes over at once when no live replica can come to rest
within its wait, rather than hold its writes for nothing.

Pure: times are the caller's monotonic seconds. Not safe for concurrent use (the replica's
event loop owns it).
"""
from __future__ import annotations

# Kafka's client defaults: request.timeout.ms 30000 + retry.backoff.ms 100.
DEFAULT_RETRY_HORIZON_MS = 30_100


class RestReadiness:
    """The last write (anything that changed the log or the role) and the last append (a
    produce, even one answered as a duplicate, or a follower's copy) of one replica."""

    def __init__(self, now_s: float, retry_horizon_ms: int = DEFAULT_RETRY_HORIZON_MS, *,
                 held_from_open: bool = False) -> None:
        """`held_from_open`: the horizon runs from the open as from an append. A replica opens
        because a write came (a wake, a new partition's first write): a write that waited for
        the wake longer than its request's time was withdrawn and answered REQUEST_TIMED_OUT,
        and its producer retries within the horizon; resting the replica first would send that
        retry to another wake, and under load round again (issue 56)."""
        self.retry_horizon_ms = retry_horizon_ms
        self._last_write_s = now_s
        self._last_append_s = now_s if held_from_open else float("-inf")

    def wrote(self, now_s: float) -> None:
        """The log or the role changed: the idle time starts again."""
        self._last_write_s = now_s

    def appended(self, now_s: float) -> None:
        """Records came in (a write too): no rest before the retry horizon has passed."""
        self._last_write_s = self._last_append_s = now_s

    def within_retry_horizon(self, now_s: float) -> bool:
        """Whether a producer whose answer was lost may still retry an append of this replica."""
        return (now_s - self._last_append_s) * 1000 < self.retry_horizon_ms

    def idle_for_ms(self, now_s: float, quiet: bool) -> float:
        """Milliseconds since the last write; 0 (busy) while the replica is not `quiet`; while an
        append is inside the retry horizon, minus the milliseconds until it leaves it."""
        if self.within_retry_horizon(now_s):
            return -(self._last_append_s * 1000 + self.retry_horizon_ms - now_s * 1000)
        if not quiet:
            return 0.0
        return (now_s - self._last_write_s) * 1000
