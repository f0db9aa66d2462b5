"""Which idle replicas give up their processes: the pure choice, and the pool lending and
making room with stand-in replicas (no Ray)."""
from __future__ import annotations

import asyncio
import logging
import time
from types import SimpleNamespace
from typing import Any

from rafka.common.types import TopicPartition
from rafka.coordinator.broker.process_pool import (MIN_IDLE_TO_LEND_MS, MIN_IDLE_TO_MAKE_ROOM_MS, ProcessPool,
                                                   idlest, open_long_enough, room_may_come)

log = logging.getLogger("test.process_pool")
A, B, C, D = (TopicPartition("t", p) for p in range(4))


def test_idlest_first_only_those_idle_long_enough() -> None:
    assert idlest({A: 300, B: 9000, C: 100, D: 600}, 2, 250) == [B, D]


def test_a_replica_that_did_not_answer_is_never_chosen() -> None:
    assert idlest({A: TimeoutError(), B: 500, C: None, D: True}, 5, 0) == [B]


def test_only_replicas_open_long_enough_are_asked() -> None:
    assert open_long_enough({A: 100.0, B: 109.9, C: 95.0}, 110.0, 250) == [A, C]


def _pool(idle: dict[TopicPartition, float], *, ticking: bool = False, limit: int = 2) -> tuple[ProcessPool, list]:
    opened = time.monotonic() - 60
    running = {tp: SimpleNamespace(pid=1000 + tp.partition, opened_at=opened) for tp in idle}
    rested: list = []

    async def idle_for_ms(replica: Any) -> float:
        return idle[next(tp for tp, r in running.items() if r is replica)]

    async def rest(tp: TopicPartition, pid: int) -> bool:
        rested.append((tp, pid))
        running.pop(tp)
        return True

    return ProcessPool(limit, 0, lambda: running, idle_for_ms, rest, lambda: ticking, log), rested


def test_lending_rests_the_idlest_replica_idle_long_enough() -> None:
    pool, rested = _pool({A: MIN_IDLE_TO_LEND_MS + 10, B: MIN_IDLE_TO_LEND_MS + 5000, C: 10})
    assert asyncio.run(pool.lend_a_process()) is True
    assert rested == [(B, 1001)]


def test_no_lending_when_no_replica_is_idle_long_enough_or_during_a_tick() -> None:
    pool, rested = _pool({A: MIN_IDLE_TO_LEND_MS - 1})
    assert asyncio.run(pool.lend_a_process()) is False
    pool, rested = _pool({A: MIN_IDLE_TO_LEND_MS * 10}, ticking=True)
    assert asyncio.run(pool.lend_a_process()) is False and rested == []


def test_making_room_rests_up_to_the_count_asked_idlest_first() -> None:
    pool, rested = _pool({A: MIN_IDLE_TO_MAKE_ROOM_MS + 1, B: 50_000, C: 1_000, D: 0})
    relief = asyncio.run(pool.make_room(2))
    assert relief.rested == 2 and relief.room_may_come
    assert [tp for tp, _ in rested] == [B, C]


def test_room_may_come_from_a_busy_replica_or_one_leaving_its_horizon_within_the_wait() -> None:
    assert room_may_come({A: 0.0}, 0, 30_100, 10_000)                 # busy: quiet again soon
    assert room_may_come({A: -29_000.0, B: -9_000.0}, 0, 30_100, 10_000)   # B leaves its horizon in 9 s
    assert not room_may_come({A: -29_000.0, B: -12_000.0}, 0, 30_100, 10_000)
    assert not room_may_come({A: TimeoutError(), B: None}, 0, 30_100, 10_000)   # no answer: not counted on


def test_replicas_just_woken_count_only_when_the_horizon_is_shorter_than_the_wait() -> None:
    assert not room_may_come({A: -29_000.0}, 3, 30_100, 10_000)   # woken for writes: 30 s in the horizon
    assert room_may_come({A: -29_000.0}, 3, 0, 10_000)            # no horizon: quiet again soon
    assert not room_may_come({}, 0, 0, 10_000)


def test_making_room_with_every_replica_inside_its_horizon_says_none_may_come() -> None:
    pool, rested = _pool({A: -20_000.0, B: -25_000.0})
    relief = asyncio.run(pool.make_room(1))
    assert (relief.rested, relief.room_may_come, rested) == (0, False, [])


def test_rests_are_coming_near_the_cap() -> None:
    pool, _ = _pool({A: 0, B: 0}, limit=2)
    assert pool.rests_coming()
    pool, _ = _pool({A: 0}, limit=-1)
    assert not pool.rests_coming()


def test_internal_topics_replicas_are_never_rested_early() -> None:
    """Group members' heartbeats wait behind their commits: the offsets partitions' replicas
    are neither lent nor rested to make room, however idle (they rest after
    replica.dormant.after.ms)."""
    offsets, txn_state = TopicPartition("__consumer_offsets", 0), TopicPartition("__transaction_state", 0)
    pool, rested = _pool({offsets: 900_000.0, txn_state: 900_000.0, A: MIN_IDLE_TO_LEND_MS + 1})
    assert asyncio.run(pool.lend_a_process()) is True and rested == [(A, 1000)]
    pool, rested = _pool({offsets: 900_000.0, txn_state: 900_000.0})
    relief = asyncio.run(pool.make_room(2))
    assert (relief.rested, relief.room_may_come, rested) == (0, False, [])
