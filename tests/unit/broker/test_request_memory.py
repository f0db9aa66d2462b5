"""RequestMemory: the accounts of request bytes read but not answered, without sockets.

A fake connection (`Peer`) plays what the server does: it reads a frame's body as the
account grants it, pauses when told, and its requests are answered later.
"""
from __future__ import annotations

import random

import pytest

from rafka.net.request_memory import RequestMemory, Wait

KIB, MIB = 1024, 1024 * 1024


class Peer:
    """One connection as the server drives it: `paused` mirrors the transport."""

    def __init__(self, memory: RequestMemory, name: str = "?") -> None:
        self.memory = memory
        self.paused = False
        self.resumed = 0
        self.share = memory.open(self._resume, label=name)
        self.length = self.got = self.allowed = 0
        self.costs: list[int] = []   # of requests read whole, not answered yet

    def _resume(self) -> None:
        self.paused = False
        self.resumed += 1

    def start(self, length: int) -> bool:
        """The next frame's head arrived; False when the connection must wait first."""
        if not self.memory.may_start_frame(self.share):
            self.paused = True
            return False
        self.length, self.got, self.allowed = length, 0, 0
        return True

    def read(self, n: int | None = None) -> int:
        """One socket read of up to `n` body bytes (all that is granted by default)."""
        if self.got == self.allowed:
            self.allowed += self.memory.grant(self.share, self.length, self.got)
            if self.share.waiting is not Wait.NONE:
                self.paused = True
        k = self.allowed - self.got if n is None else min(n, self.allowed - self.got)
        self.got += k
        if self.got == self.length:
            self.costs.append(self.memory.frame_read(self.share))
            self.length = 0
            if not self.memory.may_start_frame(self.share):
                self.paused = True
        return k

    def read_frame(self, length: int) -> None:
        assert self.start(length)
        while self.length and not self.paused:
            self.read()

    def answer(self) -> None:
        self.memory.release(self.share, self.costs.pop(0))


def test_a_length_prefix_alone_costs_nothing_and_a_large_body_is_let_in_by_pieces():
    memory = RequestMemory(100 * MIB, 100 * MIB, 500)
    peers = [Peer(memory) for _ in range(256)]
    for peer in peers:
        assert peer.start(100 * MIB)
    assert memory.total == 0
    first = peers[0].read(1)
    assert first == 1 and peers[0].allowed == 64 * KIB   # a piece, not the announced 100 MiB
    assert memory.total == 64 * KIB + memory.overhead_bytes


def test_a_produce_sized_frame_is_granted_whole_while_memory_is_plentiful():
    memory = RequestMemory(100 * MIB, 100 * MIB, 500)
    peer = Peer(memory)
    assert peer.start(1_000_000)
    peer.read(1)
    assert peer.allowed == 1_000_000   # one allocation for the whole body: the fast path
    peer.read()
    assert peer.costs == [1_000_000 + memory.overhead_bytes]
    peer.answer()
    assert memory.total == 0 and memory.complete == 0


def test_reading_pauses_at_the_budget_and_answers_resume_the_waiters_in_order():
    memory = RequestMemory(1 * MIB, 4 * MIB, 500, eager_bytes=0)
    holder, first, second = Peer(memory, "holder"), Peer(memory, "first"), Peer(memory, "second")
    holder.read_frame(1 * MIB + 32 * KIB)
    assert holder.costs and memory.total >= memory.limit_bytes
    for peer in (first, second):
        assert peer.start(256 * KIB)
        assert peer.read() == 1 and peer.paused and peer.share.waiting is Wait.SHARED
    assert memory.waiting == 2
    holder.answer()   # 1 MiB free: room for both pieces, oldest first
    assert not first.paused and not second.paused
    assert first.resumed == 1 and second.resumed == 1


def test_a_connections_first_small_request_is_let_in_even_when_the_budget_is_full():
    memory = RequestMemory(1 * MIB, 1 * MIB, 500, eager_bytes=0)
    hog = Peer(memory)
    while memory.total < memory.limit_bytes:
        hog.read_frame(256 * KIB)
    consumer = Peer(memory)
    consumer.read_frame(200)            # a heartbeat, a metadata or a fetch request
    assert consumer.costs and not consumer.paused
    assert consumer.start(300)          # its second one, while the first is unanswered, waits
    consumer.read()
    assert consumer.paused and consumer.share.waiting is Wait.SHARED


def test_a_connection_stops_reading_at_queued_max_requests_and_its_own_byte_bound():
    memory = RequestMemory(100 * MIB, 1 * MIB, 3)
    peer = Peer(memory)
    for _ in range(3):
        peer.read_frame(100)
    assert peer.paused and peer.share.waiting is Wait.OWN and not peer.start(100)
    peer.answer()
    assert not peer.paused and peer.resumed == 1
    big = Peer(memory)
    big.read_frame(1 * MIB)             # one request up to socket.request.max.bytes always fits
    assert big.paused and big.share.waiting is Wait.OWN
    big.answer()
    assert not big.paused


def test_partial_frames_that_fill_the_budget_cannot_deadlock():
    """Two large requests arrive at once and their pieces fill the budget: no answer is pending
    that could free memory, so the one refused first takes the overdraft token and is read to
    its end; the other waits for its answer, then goes on."""
    memory = RequestMemory(2 * MIB, 8 * MIB, 500)
    a, b = Peer(memory, "a"), Peer(memory, "b")
    a.start(3 * MIB)
    b.start(3 * MIB)
    while any(not p.paused and p.length for p in (a, b)):
        for peer in (a, b):
            if not peer.paused and peer.length:
                peer.read()
    done, waiting = (a, b) if a.costs else (b, a)
    assert done.costs and not waiting.costs and waiting.paused
    assert memory.total > memory.limit_bytes   # the overdraft: one frame beyond the budget
    done.answer()
    assert not waiting.paused
    while waiting.length:
        assert not waiting.paused, "the second request never got memory"
        waiting.read()
    assert waiting.costs


def test_the_last_byte_of_a_frame_is_never_refused():
    """A read that completes its frame with the one byte a paused read may bring would leave a
    connection waiting with nothing to wait for (and able to take the overdraft token)."""
    memory = RequestMemory(1 * MIB, 4 * MIB, 500, eager_bytes=0)
    hog, peer = Peer(memory), Peer(memory)
    hog.read_frame(1 * MIB + 32 * KIB)
    peer.read_frame(10)
    peer.start(1)
    assert peer.read() == 1 and peer.costs and not peer.paused and memory.waiting == 0


def test_a_closed_connection_frees_everything_it_held_and_wakes_the_waiters():
    memory = RequestMemory(1 * MIB, 1 * MIB, 500, eager_bytes=0)
    hog, waiter = Peer(memory), Peer(memory)
    hog.read_frame(512 * KIB)
    hog.start(900 * KIB)
    while not hog.paused:
        hog.read()
    waiter.read_frame(100)
    waiter.start(200 * KIB)
    waiter.read()
    assert waiter.paused
    memory.close(hog.share)
    assert not waiter.paused
    assert memory.total == waiter.share.outstanding
    memory.close(hog.share)   # idempotent
    memory.release(hog.share, 123)   # an answer after the close changes nothing
    assert memory.total == waiter.share.outstanding


@pytest.mark.parametrize("seed", range(6))
def test_random_traffic_stays_within_the_stated_bound_and_always_completes(seed):
    """Many connections send frames of every size (some announce more than they send for a
    while); answers come back in random order. Invariants: the accounts add up, the front end
    never holds more than the stated bound, and every request is read in the end."""
    rng = random.Random(seed)
    limit, max_request = 4 * MIB, 3 * MIB
    memory = RequestMemory(limit, max_request, 8, small_bytes=16 * KIB, eager_bytes=512 * KIB,
                           piece_bytes=32 * KIB)
    peers = [Peer(memory, str(i)) for i in range(12)]
    todo = {p: [rng.choice([1, 2, 50, 300, 8 * KIB, 40 * KIB, 400 * KIB, 1 * MIB, max_request])
                for _ in range(rng.randint(3, 12))] for p in peers}
    bound = (limit + memory.piece_bytes + max_request
             + len(peers) * (memory.small_bytes + memory.overhead_bytes + 1))
    steps = 0
    while any(todo.values()) or any(p.costs for p in peers) or any(p.length for p in peers):
        steps += 1
        assert steps < 200_000, "no progress"
        readers = [p for p in peers if not p.paused and (p.length or todo[p])]
        answerable = [p for p in peers if p.costs]
        if readers and (not answerable or rng.random() < 0.7):
            peer = rng.choice(readers)
            if not peer.length:
                if not peer.start(todo[peer][0]):
                    continue
                todo[peer].pop(0)
            peer.read(rng.choice([1, 4 * KIB, 64 * KIB, 1 * MIB]))
        elif answerable:
            rng.choice(answerable).answer()
        else:
            pytest.fail(f"deadlock: every connection paused, nothing to answer ({memory.total} bytes held)")
        assert memory.total == sum(p.share.outstanding for p in peers)
        assert memory.total <= bound
        assert memory.token is None or memory.token.reading   # the overdraft goes to a frame being read
    assert memory.total == 0 and memory.complete == 0 and memory.waiting == 0
