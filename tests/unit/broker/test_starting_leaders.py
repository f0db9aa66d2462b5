"""`StartingLeaders`: a produce for a partition whose local leader replica still starts waits
for it, bounded, and gives up as soon as the partition stops starting."""
from __future__ import annotations

import asyncio

from rafka.common.types import TopicPartition
from rafka.net.starting_leaders import StartingLeaders

TP, OTHER = TopicPartition("t", 0), TopicPartition("t", 1)


def test_a_waiter_gets_the_replica_once_it_runs():
    async def scenario():
        starting, running = StartingLeaders(), {}
        starting.update({TP, OTHER})
        waiter = asyncio.ensure_future(starting.wait(TP, running.get, 5))
        await asyncio.sleep(0)
        running[OTHER] = "other"
        starting.changed()   # another partition started: TP's waiter looks again and goes on waiting
        await asyncio.sleep(0)
        assert not waiter.done()
        running[TP] = "channel"
        starting.update({OTHER})
        return await waiter
    assert asyncio.run(scenario()) == "channel"


def test_a_waiter_gives_up_when_the_partition_no_longer_starts():
    async def scenario():
        starting = StartingLeaders()
        starting.update({TP})
        waiter = asyncio.ensure_future(starting.wait(TP, {}.get, 5))
        await asyncio.sleep(0)
        starting.update(set())   # its start failed, or another broker leads it now
        return await asyncio.wait_for(waiter, 1)
    assert asyncio.run(scenario()) is None


def test_a_waiter_gives_up_at_its_deadline():
    async def scenario():
        starting = StartingLeaders()
        starting.update({TP})
        loop = asyncio.get_running_loop()
        began = loop.time()
        found = await starting.wait(TP, {}.get, 0.05)
        return found, loop.time() - began
    found, waited = asyncio.run(scenario())
    assert found is None and 0.04 <= waited < 2


def test_a_partition_that_is_not_starting_is_not_waited_for():
    async def scenario():
        return await asyncio.wait_for(StartingLeaders().wait(TP, {}.get, 60), 1)
    assert asyncio.run(scenario()) is None


def test_without_a_bound_a_waiter_waits_as_long_as_the_partition_starts():
    async def scenario():
        starting, running = StartingLeaders(), {}
        starting.update({TP})
        waiter = asyncio.ensure_future(starting.wait(TP, running.get, None))
        for _ in range(5):
            await asyncio.sleep(0.01)
            starting.changed()
        assert not waiter.done()
        running[TP] = "channel"
        starting.update(set())
        return await asyncio.wait_for(waiter, 1)
    assert asyncio.run(scenario()) == "channel"
