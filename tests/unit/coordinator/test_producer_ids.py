"""ProducerIdManager: ids from claimed blocks, prefetch, and the KIP-360 epoch bump."""
from __future__ import annotations

import asyncio

import pytest

from rafka.coordinator.transaction.producer_ids import (
    MAX_EPOCH, NeedsBlock, ProducerIdAndEpoch, ProducerIdManager, ProducerIdSource,
)
from rafka.coordinator.zk.zk_data import ProducerIdBlock

DAY = 86_400_000


def manager(*blocks: ProducerIdBlock, **kwargs) -> ProducerIdManager:
    m = ProducerIdManager(broker_id=1, **kwargs)
    for b in blocks:
        m.add_block(b)
    return m


def test_fresh_ids_come_from_the_block_in_order_at_epoch_zero():
    m = manager(ProducerIdBlock(1, 1000, 10))
    got = [m.init_producer(-1, -1, 0) for _ in range(3)]
    assert got == [ProducerIdAndEpoch(1000, 0), ProducerIdAndEpoch(1001, 0), ProducerIdAndEpoch(1002, 0)]
    assert m.remaining == 7


def test_without_a_block_the_caller_must_claim_one():
    m = manager()
    assert m.wants_block()
    with pytest.raises(NeedsBlock):
        m.init_producer(-1, -1, 0)


def test_next_block_is_wanted_at_ninety_percent_and_used_after_the_current_one():
    m = manager(ProducerIdBlock(1, 0, 10))
    for _ in range(8):
        m.init_producer(-1, -1, 0)
    assert not m.wants_block()
    m.init_producer(-1, -1, 0)
    assert m.wants_block()
    m.add_block(ProducerIdBlock(1, 5000, 10))
    assert not m.wants_block() and m.remaining == 11
    assert [m.init_producer(-1, -1, 0).producer_id for _ in range(2)] == [9, 5000]


def test_a_block_for_another_broker_is_refused():
    with pytest.raises(ValueError):
        manager(ProducerIdBlock(2, 0, 10))


def test_latest_id_and_epoch_given_here_are_bumped():
    m = manager(ProducerIdBlock(1, 0, 10))
    first = m.init_producer(-1, -1, 0)
    bumped = m.init_producer(first.producer_id, 0, 1000)
    assert bumped == ProducerIdAndEpoch(first.producer_id, 1)
    assert m.init_producer(first.producer_id, 1, 2000) == ProducerIdAndEpoch(first.producer_id, 2)


@pytest.mark.parametrize("pid, epoch", [(7, 0), (0, 5), (0, -1)])
def test_unknown_or_stale_id_and_epoch_get_a_fresh_id(pid, epoch):
    m = manager(ProducerIdBlock(1, 0, 10))
    m.init_producer(-1, -1, 0)  # gives (0, 0)
    assert m.init_producer(pid, epoch, 10) == ProducerIdAndEpoch(1, 0)


def test_epoch_near_its_limit_gets_a_fresh_id():
    m = manager(ProducerIdBlock(1, 0, 10))
    pid = m.init_producer(-1, -1, 0).producer_id
    for epoch in range(MAX_EPOCH - 1):  # Kafka bumps until the epoch reaches Short.MAX_VALUE - 1
        assert m.init_producer(pid, epoch, 1) == ProducerIdAndEpoch(pid, epoch + 1)
    assert m.init_producer(pid, MAX_EPOCH - 1, 1) == ProducerIdAndEpoch(pid + 1, 0)


def test_forgotten_after_remember_time_or_when_too_many():
    m = manager(ProducerIdBlock(1, 0, 100), remember_ms=DAY, max_remembered=3)
    first = m.init_producer(-1, -1, 0)
    assert m.init_producer(first.producer_id, 0, DAY).producer_id != first.producer_id
    m2 = manager(ProducerIdBlock(1, 0, 100), max_remembered=3)
    ids = [m2.init_producer(-1, -1, t).producer_id for t in range(4)]
    assert m2.init_producer(ids[0], 0, 10).producer_epoch == 0  # evicted: fresh id
    assert m2.init_producer(ids[3], 0, 10) == ProducerIdAndEpoch(ids[3], 1)


# ---- ProducerIdSource: the manager fed by async block claims --------------------------------
def source_with(claims: list) -> tuple[ProducerIdSource, list[int]]:
    """A source whose claims hand out `claims` in turn (a block, or an exception to raise)."""
    calls: list[int] = []

    async def claim() -> ProducerIdBlock:
        calls.append(len(calls))
        await asyncio.sleep(0)
        outcome = claims[min(len(calls) - 1, len(claims) - 1)]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    return ProducerIdSource(ProducerIdManager(broker_id=1), claim, clock_ms=lambda: 0), calls


def test_source_claims_a_block_on_first_use_and_once_for_concurrent_requests():
    source, calls = source_with([ProducerIdBlock(1, 0, 1000)])

    async def run() -> list:
        return await asyncio.gather(*[source.init_producer(-1, -1) for _ in range(20)])

    answers = asyncio.run(run())
    assert sorted(a.producer_id for a in answers) == list(range(20)) and calls == [0]


def test_source_prefetches_the_next_block_before_the_current_one_runs_out():
    source, calls = source_with([ProducerIdBlock(1, 0, 10), ProducerIdBlock(1, 500, 10)])

    async def run() -> list[int]:
        return [(await source.init_producer(-1, -1)).producer_id for _ in range(12)]

    assert asyncio.run(run()) == list(range(10)) + [500, 501]
    assert calls == [0, 1]


def test_source_answers_none_when_no_block_can_be_claimed_and_recovers_later():
    source, calls = source_with([ConnectionError("ZooKeeper unreachable"), ProducerIdBlock(1, 0, 10)])

    async def run() -> tuple:
        return await source.init_producer(-1, -1), await source.init_producer(-1, -1)

    failed, recovered = asyncio.run(run())
    assert failed is None and recovered == ProducerIdAndEpoch(0, 0) and len(calls) == 2
