"""`SentHandle`: an actor handle pickled once where it is made, unpickled only where it is used.

Ray unpickles every `ActorHandle` in a call's arguments before the call runs, and building one
is not cheap: it makes a function descriptor and a method shell for each of the actor's
methods (a partition replica has dozens). A broker's coordinator tells its front end of every
live replica, with the replica's handle, in each whole publication (each metadata change: a
topic created or deleted, an ISR change); with a hundred replicas live, franz-go's suite had
the front end spend a fifth of its time unpickling handles it already held (issue 56: the
front end stalled long enough for clients' connections to time out). The front end keeps a
replica's channel while its data socket is unchanged and needs the handle only for a new one,
and then only for rare calls (a follower's truncation, an OffsetForLeaderEpoch), so the
handle travels as bytes, pickled once per replica, and is unpickled at its first use.

Out-of-band pickling of a handle is Ray's own path for it (`ActorHandle.__reduce__`); the
actor's lifetime is held by the process that made it (the coordinator keeps the handle).
"""
from __future__ import annotations

from typing import Any

from ray import cloudpickle


class SentHandle:
    """An actor handle as bytes; `get()` unpickles it once, in the process that uses it."""

    __slots__ = ("data", "_handle")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self._handle: Any = None

    @classmethod
    def of(cls, handle: Any) -> "SentHandle":
        """Pickle `handle` (an `ActorHandle`) now, once."""
        return cls(cloudpickle.dumps(handle))

    def get(self) -> Any:
        """The actor handle (unpickled at the first call, then kept)."""
        if self._handle is None:
            self._handle = cloudpickle.loads(self.data)
        return self._handle

    def __reduce__(self) -> tuple:
        return SentHandle, (self.data,)   # (the bytes only: never the unpickled handle)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SentHandle) and other.data == self.data

    def __hash__(self) -> int:
        return hash(self.data)

    def __repr__(self) -> str:
        return f"SentHandle({len(self.data)} bytes)"


def actor_of(reference: Any) -> Any:
    """The actor handle behind `reference`: a `SentHandle`'s, or `reference` itself (a handle,
    or a stand-in in tests)."""
    return reference.get() if isinstance(reference, SentHandle) else reference
