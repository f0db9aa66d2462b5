"""The metadata publisher: what the front end is told, in order, coalesced, and never held up
past the call timeout by a front end that hangs. A recording stand-in front end; no Ray."""
from __future__ import annotations

import asyncio
import logging
import uuid
from types import SimpleNamespace
from typing import Any

import pytest

from rafka.common.metadata import BrokerInfo, ClusterMetadata, PartitionInfo, TopicInfo
from rafka.common.types import TopicPartition
from rafka.coordinator.broker.frontend_client import FrontendClient
from rafka.coordinator.broker.metadata_publisher import (MetadataPublisher, led_here, next_publication,
                                                         starting_leaders)
from rafka.coordinator.broker.replica_plan import LocalReplicas

log = logging.getLogger("test.metadata_publisher")
ME = 1
T0, T1, T2 = (TopicPartition("t", p) for p in range(3))


def metadata(leaders: dict[int, int], epoch: int = 1) -> ClusterMetadata:
    """Topic "t" with partition p led by leaders[p], on brokers 1 and 2."""
    partitions = {p: PartitionInfo(p, leader, 0, (1, 2), (1, 2)) for p, leader in leaders.items()}
    return ClusterMetadata("c", 1, epoch, {b: BrokerInfo(b, "127.0.0.1", 9000 + b) for b in (1, 2)},
                           {"t": TopicInfo("t", uuid.UUID(int=1), partitions)})


def replica(name: str, pid: int = 100) -> Any:
    return SimpleNamespace(actor=f"actor-{name}", sent=f"sent-{name}", socket=f"/tmp/{name}.sock", pid=pid)


def local(leaders: dict | None = None, followers: dict | None = None, dormant_leaders: dict | None = None,
          offline: frozenset = frozenset()) -> LocalReplicas:
    return LocalReplicas(leaders or {}, followers or {}, dormant_leaders or {}, {}, offline)


class RecordingFrontEnd:
    """Records each call; `hang` makes calls wait until released, `fail` makes them raise."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple]] = []
        self.hang = False
        self.fail = False
        self.release = asyncio.Event()

    async def _called(self, name: str, args: tuple) -> None:
        self.calls.append((name, args))
        if self.hang:
            await self.release.wait()
        if self.fail:
            raise RuntimeError("front end died")

    async def update_metadata(self, *args: Any) -> None:
        await self._called("update_metadata", args)

    async def update_replicas(self, *args: Any) -> None:
        await self._called("update_replicas", args)

    async def update_leaders(self, *args: Any) -> None:
        await self._called("update_leaders", args)


# -- the pure decision ---------------------------------------------------------------------
def test_the_first_publication_is_whole_and_names_the_starting_leaders() -> None:
    m = metadata({0: ME, 1: ME, 2: 2})
    now = local(leaders={T0: replica("t0")})
    p = next_publication(None, 1, m, now, led_here(m, ME))
    assert p.whole and p.snapshot.starting == {T1}


def test_a_wake_alone_sends_only_its_partition() -> None:
    m = metadata({0: ME, 1: ME})
    before = next_publication(None, 1, m, local(leaders={T0: replica("t0")}, dormant_leaders={T1: "closed"}),
                              led_here(m, ME)).snapshot
    after = local(leaders={T0: replica("t0"), T1: replica("t1", 101)})
    p = next_publication(before, 2, m, after, led_here(m, ME))
    assert not p.whole and p.changed == {T1}


def test_nothing_changed_sends_nothing() -> None:
    m = metadata({0: ME})
    now = local(leaders={T0: replica("t0")})
    before = next_publication(None, 1, m, now, led_here(m, ME)).snapshot
    assert not next_publication(before, 2, m, now, led_here(m, ME)).sends


@pytest.mark.parametrize("change", ["metadata", "offline", "starting"])
def test_new_metadata_offline_or_starting_replicas_send_the_whole(change: str) -> None:
    m = metadata({0: ME, 1: ME})
    now = local(leaders={T0: replica("t0"), T1: replica("t1")})
    before = next_publication(None, 1, m, now, led_here(m, ME)).snapshot
    if change == "metadata":
        m = metadata({0: ME, 1: ME}, epoch=2)
    elif change == "offline":
        now = local(leaders={T0: replica("t0")}, offline=frozenset({T1}))
    else:
        now = local(leaders={T0: replica("t0")})
    assert next_publication(before, 2, m, now, led_here(m, ME)).whole


def test_a_failed_or_dormant_leader_is_not_starting() -> None:
    led = frozenset({T0, T1, T2})
    assert starting_leaders(led, local(leaders={T0: replica("t0")}, dormant_leaders={T1: None},
                                       offline=frozenset({T2}))) == frozenset()


# -- the runner ----------------------------------------------------------------------------
async def _until(condition: Any, timeout_s: float = 5.0) -> None:
    async def poll() -> None:
        while not condition():
            await asyncio.sleep(0.001)
    await asyncio.wait_for(poll(), timeout_s)


def test_a_burst_of_requests_costs_few_publications_in_order() -> None:
    async def main() -> tuple[list, MetadataPublisher]:
        front = RecordingFrontEnd()
        publisher = MetadataPublisher(ME, lambda: local(leaders={T0: replica("t0")}), front, log)
        await publisher.publish(metadata({0: ME}, epoch=1))
        front.hang = True
        first = asyncio.ensure_future(publisher.publish(metadata({0: ME}, epoch=2)))
        await _until(lambda: len(front.calls) == 2)   # under way, held by the front end
        waiters = [asyncio.ensure_future(publisher.publish(metadata({0: ME}, epoch=e))) for e in (3, 4, 5)]
        front.hang = False
        front.release.set()
        await asyncio.gather(first, *waiters)
        return front.calls, publisher

    calls, publisher = asyncio.run(main())
    assert [args[0].controller_epoch for _, args in calls] == [1, 2, 5]   # the three waiting: one
    assert publisher.metadata.controller_epoch == 5


def test_a_replica_changed_while_publishing_is_published_next() -> None:
    async def main() -> list:
        front = RecordingFrontEnd()
        state = {"local": local(leaders={T0: replica("t0")})}
        publisher = MetadataPublisher(ME, lambda: state["local"], front, log)
        await publisher.publish(metadata({0: ME, 1: ME}))
        front.hang = True
        state["local"] = local(leaders={T0: replica("t0")}, dormant_leaders={T1: "closed"})
        under_way = asyncio.ensure_future(publisher.publish())
        await _until(lambda: len(front.calls) == 2)
        state["local"] = local(leaders={T0: replica("t0"), T1: replica("t1")})   # woke meanwhile
        front.hang = False
        front.release.set()
        await under_way
        await _until(lambda: len(front.calls) == 3)   # nobody asked: the runner saw the change
        return front.calls

    calls = asyncio.run(main())
    name, args = calls[-1]
    assert name == "update_replicas" and args[0] == {T1} and T1 in args[1]


def test_a_hung_front_end_costs_the_call_timeout_is_logged_and_the_next_publication_is_whole(
        caplog: pytest.LogCaptureFixture) -> None:
    class HungHandle:
        """A front end actor that never answers (each method's `.remote` returns a call that hangs)."""

        def __getattr__(self, name: str) -> Any:
            return SimpleNamespace(remote=lambda *args: asyncio.Event().wait())

    async def main() -> tuple[float, list]:
        client = FrontendClient(ME, log, timeout_s=0.2)
        client.handle = HungHandle()
        publisher = MetadataPublisher(ME, lambda: local(leaders={T0: replica("t0")}), client, log,
                                      retry_backoff_s=0.05)
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(asyncio.TimeoutError):
            await publisher.publish(metadata({0: ME}))
        took = loop.time() - started
        front = RecordingFrontEnd()   # the front end answers again
        publisher._frontend = front
        await publisher.publish()
        publisher.stop()
        return took, front.calls

    with caplog.at_level(logging.WARNING):
        took, calls = asyncio.run(main())
    assert 0.2 <= took < 2.0
    assert "the front end's update_metadata got no answer within 0 s" in caplog.text
    assert calls and all(name == "update_metadata" for name, _ in calls)   # whole: its state was unknown


def test_await_metadata_waits_for_a_publication_that_meets_the_condition() -> None:
    async def main() -> tuple[bool, bool]:
        publisher = MetadataPublisher(ME, lambda: local(), RecordingFrontEnd(), log)
        waiting = asyncio.ensure_future(publisher.await_metadata(lambda m: ME in m.brokers, 5000))
        missed = await publisher.await_metadata(lambda m: 7 in m.brokers, 50)
        await publisher.publish(metadata({0: 2}))
        return missed, await waiting

    missed, met = asyncio.run(main())
    assert not missed and met


def test_settled_metadata_is_separate_from_published() -> None:
    async def main() -> tuple[bool, bool]:
        publisher = MetadataPublisher(ME, lambda: local(), RecordingFrontEnd(), log)
        await publisher.publish(metadata({0: 2}))
        before = await publisher.await_metadata(lambda m: True, 20, settled=True)
        publisher.settle(metadata({0: 2}))
        return before, await publisher.await_metadata(lambda m: True, 20, settled=True)

    assert asyncio.run(main()) == (False, True)
