"""`SentHandle`: a handle pickled once by its sender, unpickled only at its first use."""
from __future__ import annotations

import pickle
from dataclasses import dataclass

from rafka.actors.sent_handle import SentHandle, actor_of

UNPICKLED: list[str] = []


@dataclass
class Handle:
    """Stands in for an ActorHandle: counts how often it is built from bytes."""

    name: str

    def __reduce__(self) -> tuple:
        return _rebuild, (self.name,)


def _rebuild(name: str) -> Handle:
    UNPICKLED.append(name)
    return Handle(name)


def test_the_handle_is_unpickled_at_its_first_use_only_and_once():
    UNPICKLED.clear()
    sent = SentHandle.of(Handle("replica-t-0"))
    received = pickle.loads(pickle.dumps(sent))   # as Ray passes a call's arguments
    assert UNPICKLED == [] and received == sent
    assert received.get() == Handle("replica-t-0") and received.get() is received.get()
    assert UNPICKLED == ["replica-t-0"]


def test_passing_it_on_carries_the_bytes_not_the_unpickled_handle():
    UNPICKLED.clear()
    sent = SentHandle.of(Handle("a"))
    sent.get()
    again = pickle.loads(pickle.dumps(sent))
    assert again._handle is None and again.data == sent.data


def test_actor_of_takes_a_sent_handle_or_a_plain_one():
    plain = Handle("b")
    assert actor_of(plain) is plain
    assert actor_of(SentHandle.of(plain)) == plain
