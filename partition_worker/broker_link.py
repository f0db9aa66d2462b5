"""What one served partition tells its broker's `BrokerCoordinator`, each call bounded and retried.

- ISR changes (Kafka's AlterPartition): a leader proposes the ISR its followers' progress calls
  for, one proposal at a time, checked every replica.lag.time.max.ms / 2 and at each
  follower's fetch; a refused or unanswered one is proposed again after a pause.
- Idleness (`replica.dormant.after.ms`): once quiet that long, the broker hears it, and may
  rest the partition (close the replica, serve its files).
- A failed log dir: told once, retried until heard (the broker takes the whole dir offline).

The coordinator is reached through `coordinator`, an async callable its process hands in
(None: no broker, as in tests driving a replica directly; then nothing is told).
"""
from __future__ import annotations

import asyncio
import logging
import os
import time
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from rafka.common.errors import ErrorCode
from rafka.partition_worker.messages import AlterIsr

if TYPE_CHECKING:
    from rafka.partition_worker.served_partition import ServedPartition

state_change = logging.getLogger("rafka.state_change")
ALTER_ISR_TIMEOUT_S = 30.0
ALTER_ISR_RETRY_BACKOFF_MS = 1000   # a refused change (often: metadata not here yet) is proposed again after this
LOG_DIR_FAILURE_REPORT_TIMEOUT_S = 10.0   # one attempt to tell the broker this replica's log dir failed
LOG_DIR_FAILURE_REPORT_BACKOFF_S = 1.0

Coordinator = Callable[[], Awaitable[Any]]   # the broker's coordinator handle, looked up at first use


class BrokerLink:
    """One opening's calls to its broker, and the tasks that make them (cancelled by `stop`)."""

    def __init__(self, partition: ServedPartition, coordinator: Coordinator | None) -> None:
        self._partition = partition
        self._coordinator = coordinator
        self._isr_task: asyncio.Task | None = None
        self._idle_task: asyncio.Task | None = None
        self._alter_isr_task: asyncio.Task | None = None
        self._dir_failure_task: asyncio.Task | None = None   # telling the broker the log dir failed
        self._isr_retry_at_ms = 0   # after a refused or unanswered ISR change, wait before the next

    @property
    def proposing(self) -> bool:
        """Whether an ISR change is out for the coordinator's answer."""
        return self._alter_isr_task is not None

    def start(self) -> None:
        """With a broker: check the ISR periodically, and report idleness unless dormancy is off
        (`replica.dormant.after.ms` < 0). Tasks already running stay."""
        if self._coordinator is None:
            return
        if self._isr_task is None:
            self._isr_task = asyncio.ensure_future(self._check_isr_periodically())
        if self._idle_task is None and self._partition.config.replica_dormant_after_ms >= 0:
            self._idle_task = asyncio.ensure_future(self._report_idleness())

    def stop(self) -> None:
        for task in (self._isr_task, self._alter_isr_task, self._dir_failure_task, self._idle_task):
            if task is not None:
                task.cancel()
        self._isr_task = self._alter_isr_task = self._dir_failure_task = self._idle_task = None

    # -- ISR changes (Kafka's AlterPartition) ------------------------------------------------
    def role_changed(self) -> None:
        """A new LeaderAndIsr: the next ISR change may be proposed at once."""
        self._isr_retry_at_ms = 0

    async def _check_isr_periodically(self) -> None:
        """Every replica.lag.time.max.ms / 2, drop followers that stopped catching up (Kafka's
        isr-expiration task); expansions are proposed as followers' fetches arrive."""
        interval = self._partition.config.replica_lag_time_max_ms / 2000
        while True:
            await asyncio.sleep(interval)
            self.maybe_alter_isr()

    def maybe_alter_isr(self) -> None:
        """Propose the ISR the followers' progress calls for, one proposal at a time."""
        now = _now_ms()
        if self._coordinator is None or self._alter_isr_task is not None or now < self._isr_retry_at_ms:
            return
        partition = self._partition
        proposal = partition.state.propose_isr(partition.log.log_end_offset, now,
                                               partition.config.replica_lag_time_max_ms)
        if proposal is not None:
            self._alter_isr_task = asyncio.ensure_future(self._alter_isr(proposal))

    async def _alter_isr(self, isr: tuple[int, ...]) -> None:
        partition = self._partition
        state, tp = partition.state, partition.tp
        request = AlterIsr(tp.topic, tp.partition, state.broker_id, state.leader_epoch, isr, state.partition_epoch)
        try:
            coordinator = await self._coordinator()
            error, confirmed, partition_epoch = await asyncio.wait_for(
                coordinator.alter_isr.remote(request), ALTER_ISR_TIMEOUT_S)
        except Exception as e:  # noqa: BLE001 - the coordinator is gone or slow: propose again later
            error, confirmed, partition_epoch = ErrorCode.REQUEST_TIMED_OUT, None, -1
            partition.logger.warning("ISR change to %s got no answer: %r", list(isr), e)
        self._alter_isr_task = None
        if state.leader_epoch != request.leader_epoch or not state.is_leader:
            return   # leadership moved on meanwhile: the new LeaderAndIsr already says the ISR
        if error is ErrorCode.NONE:
            state_change.info("[PartitionReplica %s broker=%d] ISR %s -> %s", tp, state.broker_id,
                              list(state.isr), list(confirmed))
            state.isr_confirmed(tuple(confirmed), partition.log.log_end_offset, partition_epoch)
        else:
            partition.logger.info("ISR change to %s refused: %s", list(isr), error.name)
            if error is ErrorCode.INELIGIBLE_REPLICA:
                state.refused_as_ineligible(isr)
            state.isr_confirmed(None, partition.log.log_end_offset)
            self._isr_retry_at_ms = _now_ms() + ALTER_ISR_RETRY_BACKOFF_MS
        partition.high_watermark_moved()

    # -- idleness (replica.dormant.after.ms) ---------------------------------------------
    async def _report_idleness(self) -> None:
        """Once quiet and without writes for `replica.dormant.after.ms`, tell the broker (which
        closes this replica and serves its partition from the files until a write comes);
        again after the same delay while it stays so (the broker may have been busy)."""
        partition = self._partition
        after_ms = partition.config.replica_dormant_after_ms
        check_s = min(max(after_ms / 4000, 0.05), 5.0)
        while True:
            await asyncio.sleep(check_s)
            idle_ms = partition.idle_for_ms()
            if idle_ms < after_ms:
                continue
            try:
                coordinator = await self._coordinator()
                await asyncio.wait_for(coordinator.replica_idle.remote(partition.tp, os.getpid()),
                                       ALTER_ISR_TIMEOUT_S)
            except Exception as e:  # noqa: BLE001 - the broker is busy or gone: it hears again later
                partition.logger.info("could not report idleness: %r", e)
            partition.wrote()   # (not again before another full delay)

    # -- a failed log dir (see storage_failure.py) ---------------------------------------
    def log_went_offline(self) -> None:
        """If the log is offline now, tell the broker once (it takes the whole log dir offline
        and tells the controller); retried until the broker has heard it."""
        log = self._partition.log
        if log.offline and self._dir_failure_task is None and self._coordinator is not None:
            self._dir_failure_task = asyncio.ensure_future(self._report_log_dir_failure(log.offline_reason))

    async def _report_log_dir_failure(self, reason: str) -> None:
        partition = self._partition
        while not partition.closed.is_set():
            try:
                coordinator = await self._coordinator()
                await asyncio.wait_for(coordinator.log_dir_failed.remote(partition.log_dir, reason),
                                       LOG_DIR_FAILURE_REPORT_TIMEOUT_S)
                return
            except Exception as e:  # noqa: BLE001 - the coordinator is busy or restarting: tell it again
                partition.logger.warning("could not tell the broker that log dir %s failed: %r",
                                         partition.log_dir, e)
                await asyncio.sleep(LOG_DIR_FAILURE_REPORT_BACKOFF_S)


def _now_ms() -> int:
    return int(time.time() * 1000)
