"""`LogMaintenance`: a broker's log-manager duties that span its replicas.

Kafka's LogManager writes each log dir's `recovery-point-offset-checkpoint` and
`log-start-offset-checkpoint`, and its LogCleaner picks the dirtiest compacted logs and
keeps `cleaner-offset-checkpoint`. Here each replica is a process of its own, so the
broker's coordinator does this for all of them: it hands a starting replica its checkpointed
values, collects the replicas' current ones, rewrites the files, and runs the cleaner's
rounds. The choice of logs lives in `CleanerManager`, the file bookkeeping in
`BrokerCheckpoints`; this class does the gathering over replica handles.

Async, one event loop; file writes run in a thread. Replica handles are Ray actor handles,
called through `.remote` (this module imports no Ray).
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any, Collection, Mapping

from rafka.common.config import BrokerConfig, LogConfig
from rafka.common.types import TopicPartition
from rafka.coordinator.broker.cleaner_manager import CleanerManager, LogToClean, cleaner_summary
from rafka.coordinator.broker.control_calls import CONTROL_CALL_TIMEOUT_S
from rafka.partition_worker.broker_checkpoints import BrokerCheckpoints, PartitionCheckpoint
from rafka.partition_worker.messages import ReplicaStatus


class LogMaintenance:
    """Checkpoints and cleaner scheduling of one broker's replicas."""

    def __init__(self, config: BrokerConfig, logger: logging.LoggerAdapter | logging.Logger) -> None:
        self._config = config
        self._log = logger
        self._checkpoints = BrokerCheckpoints(config.log_dirs)
        # Topic config per hosted partition (the cleaner reads cleanup.policy and ratios).
        self._log_configs: dict[TopicPartition, LogConfig] = {}
        # First dirty offset per partition; persisted as cleaner-offset-checkpoint.
        self._cleaner_checkpoints: dict[TopicPartition, int] = {}
        self._cleaner = CleanerManager()
        # One checkpoint write at a time: each writes `<file>.tmp` and renames it, and two in
        # their threads at once renamed each other's file away (ENOENT: the dir taken offline).
        self._writing = asyncio.Lock()

    # -- replicas coming and going ---------------------------------------------------
    def place(self, tp: TopicPartition, log_dir: str) -> PartitionCheckpoint:
        """Note where `tp` lives; returns its checkpointed values for the replica to open with."""
        checkpoint = self._checkpoints.place(tp, log_dir)
        if checkpoint.cleaner_offset is not None:
            self._cleaner_checkpoints.setdefault(tp, checkpoint.cleaner_offset)
        return checkpoint

    def moved(self, tp: TopicPartition, log_dir: str) -> None:
        """`tp`'s log now lives in `log_dir` (AlterReplicaLogDirs): its checkpointed values go with it."""
        self._checkpoints.move(tp, log_dir)

    def cleaner_offset(self, tp: TopicPartition) -> int | None:
        """The cleaner's checkpoint of `tp` (its first dirty offset), if it has one."""
        return self._cleaner_checkpoints.get(tp)

    def opened(self, tp: TopicPartition, config: LogConfig) -> None:
        self._log_configs[tp] = config

    def config_changed(self, tp: TopicPartition, config: LogConfig) -> None:
        if tp in self._log_configs:
            self._log_configs[tp] = config

    def forget(self, tp: TopicPartition) -> None:
        """The partition's log was deleted from this broker."""
        self._log_configs.pop(tp, None)
        self._cleaner.forget(tp, self._cleaner_checkpoints)
        self._checkpoints.forget(tp)

    # -- checkpoint files ------------------------------------------------------------
    def take_statuses(self, tps: list[TopicPartition], statuses: list[Any]) -> None:
        """Take the recovery points and log start offsets the replicas answered (errors skipped)."""
        for tp, status in zip(tps, statuses):
            if isinstance(status, ReplicaStatus):
                self._checkpoints.update(tp, recovery_point=status.recovery_point,
                                         log_start_offset=status.log_start_offset,
                                         high_watermark=status.high_watermark)

    async def write_checkpoints(self, replicas: Mapping[TopicPartition, Any], *, recovery_points: bool = True,
                                log_start_offsets: bool = True, cleaner_offsets: bool = True,
                                ask_replicas: bool = True, skip_dirs: Collection[str] = ()) -> dict[str, str]:
        """Collect the replicas' current values (unless they were just taken) and rewrite the files
        of every log dir but `skip_dirs` (failed ones), one write at a time (a write that waits
        for another takes its values when its turn comes). Returns the dirs whose write failed, with why."""
        if ask_replicas:
            tps = list(replicas)
            statuses = await asyncio.gather(*[asyncio.wait_for(replicas[tp].status.remote(), CONTROL_CALL_TIMEOUT_S)
                                              for tp in tps], return_exceptions=True)
            self.take_statuses(tps, statuses)
        async with self._writing:
            for tp, offset in self._cleaner_checkpoints.items():
                self._checkpoints.update(tp, cleaner_offset=offset)
            snapshot = self._checkpoints.snapshot(frozenset(skip_dirs))   # (here: the tables change on this loop)
            failed, gone = await asyncio.to_thread(BrokerCheckpoints.write_snapshot, snapshot,
                                                   recovery_points=recovery_points,
                                                   log_start_offsets=log_start_offsets, cleaner_offsets=cleaner_offsets)
            self._checkpoints.prune(gone)
        return failed

    # -- the log cleaner -------------------------------------------------------------
    async def clean_dirtiest_logs(self, replicas: Mapping[TopicPartition, Any]) -> int:
        """One round: ask each compacted replica for its dirty range, clean up to
        log.cleaner.threads of the dirtiest at once, each with its share of the dedupe buffer.
        Returns how many logs were cleaned (0: nothing needed it)."""
        threads = self._config.log_cleaner_threads
        buffer_bytes = self._config.log_cleaner_dedupe_buffer_size // threads
        tps = [tp for tp, cfg in self._log_configs.items()
               if cfg.compact and tp in replicas and self._cleaner.eligible(tp)]
        infos = await asyncio.gather(*[asyncio.wait_for(replicas[tp].cleanable.remote(self._cleaner_checkpoints.get(tp)),
                                                        CONTROL_CALL_TIMEOUT_S) for tp in tps], return_exceptions=True)
        candidates = [LogToClean(tp, info, self._log_configs[tp].min_cleanable_dirty_ratio)
                      for tp, info in zip(tps, infos) if not isinstance(info, BaseException)]
        chosen = self._cleaner.choose(candidates, threads, self._cleaner_checkpoints)
        if not chosen:
            return 0
        # A cleaning itself is not bounded (Kafka's is not either: a large log takes what it takes);
        # it holds only the cleaner's next round.
        results = await asyncio.gather(*[replicas[c.tp].clean.remote(buffer_bytes, c.info.first_dirty_offset)
                                         for c in chosen], return_exceptions=True)
        for thread_id, (c, result) in enumerate(zip(chosen, results)):
            if c.tp not in self._log_configs:  # the partition left this broker meanwhile
                self._cleaner.forget(c.tp, self._cleaner_checkpoints)
                continue
            if isinstance(result, BaseException) or not result.ok:
                error = result if isinstance(result, BaseException) else result.error
                self._log.error("Unexpected exception thrown when cleaning log %s. Marking its partition (%s) as "
                                "uncleanable: %s", c.tp, c.tp, error)
                self._cleaner.done(c.tp, None, self._cleaner_checkpoints)
                continue
            self._cleaner.done(c.tp, result, self._cleaner_checkpoints)
            self._log.info("%s", cleaner_summary(thread_id, c.tp, c.info.first_dirty_offset, result))
        return len(chosen)
