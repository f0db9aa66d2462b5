"""`Dormancy`: one broker's replicas going to rest and waking (`replica.dormant.after.ms`).

A replica idle that long reports itself (`replica_idle`); it is closed and its partition is
served from its files until a request needs its process (`wake`). Every
log.retention.check.interval.ms the dormant logs are checked for upkeep (a segment retention
would delete, a log the cleaner would compact) and those due are woken to do it, as any
replica does, going back to rest later. Checkpoints are written shortly after rests, so a
broker killed later restarts its dormant replicas with their final high watermark.

The reconciler does the rest and wake themselves; this module decides when, and keeps the
front end (`MetadataPublisher`) and the offline report in step.
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from typing import Any, Awaitable, Callable

from rafka.common.config import LogConfig
from rafka.common.types import TopicPartition
from rafka.coordinator.broker.background import BackgroundTasks
from rafka.coordinator.broker.log_maintenance import LogMaintenance
from rafka.coordinator.broker.metadata_publisher import MetadataPublisher
from rafka.coordinator.broker.reconciler import DEFAULT_MAX_PARALLEL_STARTS, ReplicaReconciler
from rafka.partition_worker.closed_log import ClosedLogError, upkeep_due

REST_CHECKPOINT_DELAY_S = 1.0  # checkpoints are written this soon after replicas went dormant


def upkeep_config(config: LogConfig, cleaner_enabled: bool) -> LogConfig:
    """The config a dormant log's upkeep is judged by: without a log cleaner, nothing compacts."""
    if cleaner_enabled:
        return config
    return dataclasses.replace(config, cleanup_policy=tuple(p for p in config.cleanup_policy if p != "compact"))


class Dormancy:
    """Rests and wakes one broker's replicas (see the module's docstring)."""

    def __init__(self, reconciler: ReplicaReconciler, quiesce: Callable[[TopicPartition], Awaitable[bool]],
                 publisher: MetadataPublisher,
                 maintenance: LogMaintenance, tasks: BackgroundTasks, *, cleaner_enabled: bool,
                 topic_config: Callable[[str], Awaitable[LogConfig]], topic_id: Callable[[TopicPartition], Any],
                 report_offline: Callable[[], None], skip_dirs: Callable[[], set[str]],
                 log: logging.Logger | logging.LoggerAdapter) -> None:
        self._reconciler = reconciler
        self._quiesce = quiesce   # the front end holds a partition's requests (it is about to rest)
        self._publisher = publisher
        self._maintenance = maintenance
        self._tasks = tasks
        self._cleaner_enabled = cleaner_enabled
        self._topic_config = topic_config
        self._topic_id = topic_id
        self._report_offline = report_offline
        self._skip_dirs = skip_dirs
        self._log = log
        self._checkpoint_due: asyncio.TimerHandle | None = None
        self._stopped = False

    def replica_idle(self, tp: TopicPartition, pid: int) -> None:
        """A replica has had no writes for replica.dormant.after.ms: rest it in the background."""
        if not self._stopped:
            self._tasks.spawn(self.rest(tp, pid), f"resting replica {tp}")

    async def rest(self, tp: TopicPartition, pid: int) -> bool:
        """Close the idle replica of `tp` (process `pid`) and serve its partition dormant; True if it rested."""
        before = self._reconciler.replicas.get(tp)
        try:
            rested = await self._reconciler.rest(tp, pid, quiesce=lambda: self._quiesce(tp))
            if rested or self._reconciler.replicas.get(tp) is not before:   # (dormant, restarted or failed)
                self._report_offline()
                await self._publisher.publish()
                self._checkpoint_soon()
            return rested
        except Exception as e:  # noqa: BLE001 - the front end is gone (stopping): nothing to do
            self._log.warning("could not make replica %s dormant: %r", tp, e)
            return False

    async def wake(self, tp: TopicPartition) -> bool:
        """A request for a dormant replica needs its process (a produce, a follower behind):
        start it; the front end hears of it with the next publication. True once it runs."""
        if tp not in self._reconciler.dormant:
            return tp in self._reconciler.replicas
        woke = await self._reconciler.wake(tp, self._topic_id(tp))
        if not woke:
            self._report_offline()
        await self._publisher.publish()
        return woke

    async def upkeep(self) -> None:
        """Wake the dormant replicas whose logs need upkeep (at most DEFAULT_MAX_PARALLEL_STARTS at once)."""
        now_ms = int(time.time() * 1000)
        configs: dict[str, LogConfig] = {}
        due: list[tuple[TopicPartition, str]] = []
        for tp, closed in list(self._reconciler.dormant.items()):
            if tp.topic not in configs:
                configs[tp.topic] = upkeep_config(await self._topic_config(tp.topic), self._cleaner_enabled)
            try:
                reason = await asyncio.to_thread(upkeep_due, closed, configs[tp.topic],
                                                 self._maintenance.cleaner_offset(tp), now_ms)
            except ClosedLogError as e:   # its replica's recovery deals with it
                reason = str(e)
            if reason is not None:
                due.append((tp, reason))
        starts = asyncio.Semaphore(DEFAULT_MAX_PARALLEL_STARTS)

        async def wake(tp: TopicPartition, reason: str) -> None:
            async with starts:
                self._log.info("waking dormant replica %s for its log's upkeep: %s", tp, reason)
                await self.wake(tp)
        await asyncio.gather(*(wake(tp, reason) for tp, reason in due))

    def _checkpoint_soon(self) -> None:
        """Write the checkpoints shortly after replicas went dormant (coalesced)."""
        if self._checkpoint_due is None and not self._stopped:
            self._checkpoint_due = self._tasks.later(REST_CHECKPOINT_DELAY_S, self._write_checkpoints,
                                                     "writing the checkpoints after replicas went dormant")

    async def _write_checkpoints(self) -> None:
        self._checkpoint_due = None
        await self._maintenance.write_checkpoints({}, ask_replicas=False, skip_dirs=self._skip_dirs())

    def stop(self) -> None:
        self._stopped = True
