"""replica.max.live.processes: wakes wait for room, idle replicas are rested to make it, and a
broker whose replicas are all busy goes over the cap rather than stalling."""
from __future__ import annotations

import asyncio

from rafka.coordinator.broker.live_cap import LiveReplicaCap, Relief


class Broker:
    """Live replicas by name with how long each has been idle (0: busy; negative: inside its retry
    horizon for that many more ms); resting takes `rest_s`; a replica may rest within `soon_ms`."""

    def __init__(self, idle: dict[str, float], rest_s: float = 0.01, soon_ms: float = 10_000) -> None:
        self.idle = dict(idle)
        self.rest_s = rest_s
        self.soon_ms = soon_ms
        self.rested: list[str] = []
        self.rounds: list[int] = []
        self.cap: LiveReplicaCap | None = None

    def live(self) -> int:
        return len(self.idle)

    async def make_room(self, count: int) -> Relief:
        self.rounds.append(count)
        chosen = sorted((n for n, ms in self.idle.items() if ms > 0), key=lambda n: -self.idle[n])[:count]
        await asyncio.sleep(self.rest_s)
        for name in chosen:
            del self.idle[name]
            self.rested.append(name)
        return Relief(len(chosen), any(-ms < self.soon_ms for ms in self.idle.values()))

    async def wake(self, name: str, log: list[str]) -> None:
        async with self.cap.turn():
            await asyncio.sleep(0.005)   # the start
            self.idle[name] = 0.0        # busy: it was just written
            log.append(name)


def test_below_the_cap_wakes_go_ahead_and_nothing_is_rested():
    async def scenario():
        broker = Broker({"a": 5000.0})
        broker.cap = LiveReplicaCap(3, broker.live, broker.make_room)
        woke: list[str] = []
        await asyncio.gather(broker.wake("x", woke), broker.wake("y", woke))
        return broker, woke
    broker, woke = asyncio.run(scenario())
    assert sorted(woke) == ["x", "y"] and broker.rested == [] and broker.rounds == []


def test_at_the_cap_the_longest_idle_quiet_replicas_are_rested_first():
    async def scenario():
        broker = Broker({"old": 9000.0, "older": 20000.0, "recent": 100.0, "busy": 0.0})
        broker.cap = LiveReplicaCap(4, broker.live, broker.make_room)
        woke: list[str] = []
        await asyncio.gather(broker.wake("x", woke), broker.wake("y", woke))
        return broker, woke
    broker, woke = asyncio.run(scenario())
    assert sorted(woke) == ["x", "y"]
    assert broker.rested[:2] == ["older", "old"] and "busy" not in broker.rested
    assert broker.live() <= 4 and broker.cap.over_cap == 0


def test_a_burst_of_wakes_never_runs_more_than_the_cap_and_rests_in_few_rounds():
    async def scenario():
        broker = Broker({f"idle-{i}": 1000.0 + i for i in range(16)})
        broker.cap = LiveReplicaCap(16, broker.live, broker.make_room)
        peak = 0
        woke: list[str] = []

        async def wake(name: str) -> None:
            nonlocal peak
            async with broker.cap.turn():
                peak = max(peak, broker.cap.in_use())
                await asyncio.sleep(0.005)
                broker.idle[name] = 1.0   # written once, quiet again at once (acks=1, one broker)
                woke.append(name)
        await asyncio.gather(*(wake(f"new-{i}") for i in range(40)))
        return broker, woke, peak
    broker, woke, peak = asyncio.run(scenario())
    assert len(woke) == 40 and peak <= 16 and broker.live() <= 16
    assert len(broker.rounds) < 40 // 2   # rests come in batches, not one round per wake


def test_a_long_queue_behind_rests_that_come_waits_its_turn_past_the_wait():
    async def scenario():
        broker = Broker({f"idle-{i}": 1000.0 + i for i in range(4)}, rest_s=0.08)
        broker.cap = LiveReplicaCap(4, broker.live, broker.make_room, wait_s=0.3, retry_after_s=0.01)
        woke: list[str] = []
        loop = asyncio.get_running_loop()
        started = loop.time()

        async def wake(name: str) -> None:
            async with broker.cap.turn():
                await asyncio.sleep(0.005)
                broker.idle[name] = 1.0
                woke.append(name)
        await asyncio.gather(*(wake(f"new-{i}") for i in range(24)))
        return broker, woke, loop.time() - started
    broker, woke, took = asyncio.run(scenario())
    assert len(woke) == 24 and took > 0.3, (took, broker.rounds, broker.cap.over_cap)   # longer than a wait...
    assert broker.cap.over_cap == 0 and broker.live() <= 4   # ...yet none went over: rests kept coming


def test_with_every_replica_busy_a_wake_goes_over_the_cap_after_the_wait():
    async def scenario():
        broker = Broker({"busy-1": 0.0, "busy-2": 0.0})
        broker.cap = LiveReplicaCap(2, broker.live, broker.make_room, wait_s=0.3, retry_after_s=0.05)
        woke: list[str] = []
        loop = asyncio.get_running_loop()
        started = loop.time()
        await broker.wake("x", woke)
        return broker, woke, loop.time() - started
    broker, woke, waited = asyncio.run(scenario())
    assert woke == ["x"] and broker.cap.over_cap == 1 and broker.live() == 3
    assert 0.3 <= waited < 2.0
    assert 2 <= len(broker.rounds) <= 0.3 / 0.05 + 2   # retried with a pause, not in a busy loop


def test_no_limit_admits_everything_without_asking_for_room():
    async def scenario():
        broker = Broker({"a": 1.0})
        broker.cap = LiveReplicaCap(-1, broker.live, broker.make_room)
        woke: list[str] = []
        await asyncio.gather(*(broker.wake(f"n{i}", woke) for i in range(5)))
        return broker
    broker = asyncio.run(scenario())
    assert broker.live() == 6 and broker.rounds == []


def test_a_failing_round_is_retried_and_waiters_still_get_their_turn():
    async def scenario():
        broker = Broker({"idle": 500.0})
        calls = 0

        async def flaky(count: int) -> Relief:
            nonlocal calls
            calls += 1
            if calls == 1:
                raise RuntimeError("the replica did not answer")
            return await broker.make_room(count)
        broker.cap = LiveReplicaCap(1, broker.live, flaky, retry_after_s=0.01)
        woke: list[str] = []
        await broker.wake("x", woke)
        return broker, woke, calls
    broker, woke, calls = asyncio.run(scenario())
    assert woke == ["x"] and broker.rested == ["idle"] and calls == 2 and broker.cap.over_cap == 0


def test_no_wake_waits_longer_than_max_wait_even_while_rests_keep_coming():
    """Rests trickle in (one per round, 0.1 s each) so no waiter's `wait_s` ever runs out: a
    queue of wakes used to wait as long as the queue was; now each waits `max_wait_s` at most
    and then goes over the cap (its held writes are answered before the client gives up)."""
    async def scenario():
        broker = Broker({f"idle-{i}": 1000.0 + i for i in range(20)}, rest_s=0.1)
        broker.cap = LiveReplicaCap(20, broker.live, lambda count: broker.make_room(1),
                                    wait_s=5.0, retry_after_s=0.01, max_wait_s=0.35)
        loop = asyncio.get_running_loop()
        waits: list[float] = []

        async def wake(name: str) -> None:
            began = loop.time()
            async with broker.cap.turn():
                waits.append(loop.time() - began)
                broker.idle[name] = 0.0
        await asyncio.gather(*(wake(f"new-{i}") for i in range(12)))
        return broker, waits
    broker, waits = asyncio.run(scenario())
    assert len(waits) == 12 and max(waits) < 0.35 + 0.2, waits
    assert 1 <= len(broker.rested) < 12 and broker.cap.over_cap == 12 - len(broker.rested)


def test_rounds_that_free_nothing_back_off():
    """Every live replica busy: each round asks all of them (a Ray call each) for nothing, so the
    pause between rounds doubles (0.05, 0.1, 0.2, 0.4, 0.4...) instead of asking 20 times a second."""
    async def scenario():
        broker = Broker({"busy-1": 0.0, "busy-2": 0.0})
        broker.cap = LiveReplicaCap(2, broker.live, broker.make_room, wait_s=2.0, retry_after_s=0.05,
                                    max_retry_after_s=0.4)
        await broker.wake("x", [])
        return broker
    broker = asyncio.run(scenario())
    assert broker.cap.over_cap == 1
    assert 2 <= len(broker.rounds) <= 9, broker.rounds   # 2 s at a steady 0.05: about 40


def test_when_no_replica_can_rest_within_the_wait_a_wake_goes_over_at_once():
    """Every live replica appended within its producers' retry horizon (~30 s left): no rest can
    come within the 10 s a wake would wait, so the first round that finds so sends it over the
    cap at once (issue 56: waiting only held the writes past the clients' request timeout); a
    second wake meanwhile goes over without another round."""
    async def scenario():
        broker = Broker({"appended-1": -29_000.0, "appended-2": -25_000.0})
        broker.cap = LiveReplicaCap(2, broker.live, broker.make_room, wait_s=10.0, retry_after_s=0.05)
        loop = asyncio.get_running_loop()
        started = loop.time()
        woke: list[str] = []
        await broker.wake("x", woke)
        first = loop.time() - started
        await broker.wake("y", woke)
        return broker, woke, first, loop.time() - started
    broker, woke, first, both = asyncio.run(scenario())
    assert woke == ["x", "y"] and broker.cap.over_cap == 2 and broker.rested == []
    assert first < 1.0 and both < 1.0, (first, both)
    assert len(broker.rounds) == 1


def test_a_replica_leaving_its_horizon_within_the_wait_is_waited_for():
    """One replica leaves its retry horizon in 0.2 s, within the 2 s wait: the wake waits for it
    and it is rested, rather than going over the cap."""
    async def scenario():
        broker = Broker({"appended": -200.0, "busy": -29_000.0}, soon_ms=2000)
        broker.cap = LiveReplicaCap(2, broker.live, broker.make_room, wait_s=2.0, retry_after_s=0.05)

        async def leaves_horizon() -> None:
            await asyncio.sleep(0.2)
            broker.idle["appended"] = 300.0
        woke: list[str] = []
        await asyncio.gather(broker.wake("x", woke), leaves_horizon())
        return broker, woke
    broker, woke = asyncio.run(scenario())
    assert woke == ["x"] and broker.rested == ["appended"] and broker.cap.over_cap == 0
