"""`LogUpkeep`: when one broker's log maintenance runs, and what a failed log dir stops.

Kafka's LogManager rewrites each log dir's recovery-point and log-start-offset checkpoints
every log.flush.offset.checkpoint.interval.ms and log.flush.start.offset.checkpoint.interval.ms
(0 leaves a file to shutdown), and its cleaner threads clean the dirtiest compacted logs,
waiting log.cleaner.backoff.ms when none needs it. `LogMaintenance` does each round's work;
this module runs the rounds. A log dir whose write failed (a replica's or a checkpoint's,
Kafka's LogDirFailureChannel) is marked failed once, and each running replica in it is told
so once per process (it stops taking writes; see `log_dir_failure.py`).
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Awaitable, Callable, Mapping

from rafka.common.config import BrokerConfig
from rafka.common.types import TopicPartition
from rafka.coordinator.broker.log_dir_failure import FailedLogDirs, replicas_to_fence
from rafka.coordinator.broker.log_maintenance import LogMaintenance


def due_checkpoints(due: Mapping[str, float], intervals_s: Mapping[str, float], now: float
                    ) -> tuple[set[str], dict[str, float]]:
    """Which checkpoint files are due at `now` (monotonic), and when each is due next."""
    chosen = {name for name, at in due.items() if at <= now}
    return chosen, {name: (now + intervals_s[name] if name in chosen else at) for name, at in due.items()}


class LogUpkeep:
    """Checkpoint and cleaner rounds, and failed log dirs, of one broker."""

    def __init__(self, config: BrokerConfig, maintenance: LogMaintenance, failed_dirs: FailedLogDirs,
                 running: Callable[[], Mapping[TopicPartition, Any]],
                 mark_offline: Callable[[Any, str], Awaitable[None]], report_offline: Callable[[], None],
                 log: logging.Logger | logging.LoggerAdapter) -> None:
        self._config = config
        self._maintenance = maintenance
        self.failed_dirs = failed_dirs
        self._running = running          # running replicas (LaunchedReplica: .actor, .log_dir)
        self._mark_offline = mark_offline
        self._report_offline = report_offline
        self._log = log
        self._fenced: dict[TopicPartition, Any] = {}   # replicas told their dir failed (the process told)
        self._stopped = False

    def replica_actors(self) -> dict[TopicPartition, Any]:
        return {tp: r.actor for tp, r in self._running().items()}

    def skip_dirs(self) -> set[str]:
        return set(self.failed_dirs)

    async def checkpoint_periodically(self) -> None:
        """Rewrite the checkpoint files as their intervals come due; a failed write fails its dir."""
        intervals_s = {name: ms / 1000 for name, ms in (
            ("recovery_points", self._config.log_flush_offset_checkpoint_interval_ms),
            ("log_start_offsets", self._config.log_flush_start_offset_checkpoint_interval_ms)) if ms > 0}
        due = {name: time.monotonic() + interval for name, interval in intervals_s.items()}
        while due and not self._stopped:
            await asyncio.sleep(max(0.0, min(due.values()) - time.monotonic()))
            chosen, due = due_checkpoints(due, intervals_s, time.monotonic())
            try:
                failed = await self._maintenance.write_checkpoints(
                    self.replica_actors(), recovery_points="recovery_points" in chosen,
                    log_start_offsets="log_start_offsets" in chosen, skip_dirs=self.skip_dirs())
            except Exception:  # noqa: BLE001 - keep the broker alive; the next round retries
                self._log.exception("writing the log dir checkpoints failed")
                continue
            for log_dir, reason in failed.items():
                await self.dir_failed(log_dir, f"writing its checkpoint files failed: {reason}")

    async def clean_periodically(self) -> None:
        """Kafka's cleaner threads: clean the dirtiest compacted logs; when none needs it, wait
        log.cleaner.backoff.ms."""
        backoff_s = self._config.log_cleaner_backoff_ms / 1000
        while not self._stopped:
            try:
                cleaned = await self._maintenance.clean_dirtiest_logs(self.replica_actors())
            except Exception:  # noqa: BLE001 - keep the cleaner alive
                self._log.exception("log cleaner round failed")
                cleaned = 0
            if not cleaned:
                await asyncio.sleep(backoff_s)

    async def dir_failed(self, log_dir: str, reason: str) -> None:
        """A write to `log_dir` failed: its replicas stop taking writes, the controller hears of
        those another in-sync replica can take over, new partitions go elsewhere. Idempotent."""
        if self._stopped or not self.failed_dirs.fail(log_dir, reason):
            return
        self._log.error("Stopping serving logs in dir %s: %s (its replicas serve reads only; other log dirs "
                        "go on)", log_dir, reason)
        await self.fence_failed_dirs()
        self._report_offline()

    async def fence_failed_dirs(self) -> None:
        """Tell each running replica on a failed dir (once per process) that its dir failed."""
        running = self._running()
        told = {tp for tp, r in self._fenced.items() if running.get(tp) is r}
        due = replicas_to_fence({tp: r.log_dir for tp, r in running.items()}, self.failed_dirs, told)
        outcomes = await asyncio.gather(*[self._mark_offline(
            running[tp], f"log dir {running[tp].log_dir} failed: {self.failed_dirs.reasons[running[tp].log_dir]}")
            for tp in due], return_exceptions=True)
        for tp, outcome in zip(due, outcomes):
            if not isinstance(outcome, BaseException):
                self._fenced[tp] = running[tp]

    def stop(self) -> None:
        self._stopped = True
