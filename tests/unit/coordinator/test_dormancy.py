"""Replicas resting and waking, with stand-in reconciler, publisher and maintenance (no Ray):
a rest publishes and writes checkpoints soon after; a wake publishes whether it woke or not,
and reports the replica offline when it could not."""
from __future__ import annotations

import asyncio
import logging
from typing import Any

from rafka.common.types import TopicPartition
from rafka.coordinator.broker import dormancy as dormancy_module
from rafka.coordinator.broker.background import BackgroundTasks
from rafka.coordinator.broker.dormancy import Dormancy

log = logging.getLogger("test.dormancy")
TP = TopicPartition("t", 0)


class Reconciler:
    def __init__(self, *, rests: bool = True, wakes: bool = True) -> None:
        self.replicas: dict[TopicPartition, Any] = {TP: object()}
        self.dormant: dict[TopicPartition, Any] = {}
        self._rests, self._wakes = rests, wakes
        self.quiesced: list = []

    async def rest(self, tp: TopicPartition, pid: int, quiesce: Any) -> bool:
        self.quiesced.append(await quiesce())
        if self._rests:
            self.dormant[tp] = self.replicas.pop(tp)
        return self._rests

    async def wake(self, tp: TopicPartition, topic_id: Any) -> bool:
        if self._wakes:
            self.replicas[tp] = self.dormant.pop(tp)
        return self._wakes


class Publisher:
    def __init__(self) -> None:
        self.publications = 0

    async def publish(self) -> None:
        self.publications += 1


class Maintenance:
    def __init__(self) -> None:
        self.checkpoints = asyncio.Event()

    async def write_checkpoints(self, replicas: Any, *, ask_replicas: bool, skip_dirs: set) -> dict:
        self.checkpoints.set()
        return {}


def _dormancy(reconciler: Reconciler) -> tuple[Dormancy, Publisher, Maintenance, list]:
    offline: list = []

    async def quiesce(tp: TopicPartition) -> bool:
        return True

    publisher, maintenance = Publisher(), Maintenance()
    made = Dormancy(reconciler, quiesce, publisher, maintenance, BackgroundTasks(log), cleaner_enabled=True,
                    topic_config=None, topic_id=lambda tp: None, report_offline=lambda: offline.append(1),
                    skip_dirs=set, log=log)
    return made, publisher, maintenance, offline


def test_a_rest_quiesces_publishes_and_writes_checkpoints_soon(monkeypatch: Any) -> None:
    monkeypatch.setattr(dormancy_module, "REST_CHECKPOINT_DELAY_S", 0.01)

    async def main() -> tuple[bool, int, list]:
        reconciler = Reconciler()
        made, publisher, maintenance, _ = _dormancy(reconciler)
        rested = await made.rest(TP, 100)
        await asyncio.wait_for(maintenance.checkpoints.wait(), 5)
        return rested, publisher.publications, reconciler.quiesced

    assert asyncio.run(main()) == (True, 1, [True])


def test_a_replica_that_did_not_rest_is_not_published_again() -> None:
    async def main() -> tuple[bool, int]:
        made, publisher, _, _ = _dormancy(Reconciler(rests=False))
        return await made.rest(TP, 100), publisher.publications

    assert asyncio.run(main()) == (False, 0)


def test_waking_a_running_replica_answers_at_once_and_a_failed_wake_reports_it_offline() -> None:
    async def main() -> tuple[bool, int, bool, int, list]:
        made, publisher, _, offline = _dormancy(Reconciler())
        running = await made.wake(TP)   # not dormant: runs
        first = publisher.publications
        failing = Reconciler(wakes=False)
        failing.dormant[TP] = failing.replicas.pop(TP)
        made2, publisher2, _, offline2 = _dormancy(failing)
        woke = await made2.wake(TP)
        return running, first, woke, publisher2.publications, offline2

    assert asyncio.run(main()) == (True, 0, False, 1, [1])
