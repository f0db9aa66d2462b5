"""`BrokerCheckpoints`: a broker's per-log-dir checkpoint files, kept by its coordinator.

Kafka's LogManager is the one writer of each log dir's `recovery-point-offset-checkpoint`
and `log-start-offset-checkpoint`, its LogCleaner of `cleaner-offset-checkpoint`, and its
ReplicaManager of `replication-offset-checkpoint` (high watermarks). Here
the partition replicas are separate processes, so the broker's coordinator plays that part:
it reads the files when it starts, hands each replica its values when it opens the log,
collects the replicas' current values and rewrites the files periodically and on shutdown.

Pure bookkeeping over files; the coordinator does the gathering.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rafka.common.types import TopicPartition
from rafka.partition_worker.checkpoints import LogDirCheckpoints
from rafka.partition_worker.storage_failure import describe_os_error


@dataclass(frozen=True)
class PartitionCheckpoint:
    """What the log dir's checkpoints say of one partition (None: no entry)."""

    recovery_point: int | None = None
    log_start_offset: int | None = None
    cleaner_offset: int | None = None
    high_watermark: int | None = None


class BrokerCheckpoints:
    """The checkpoints of every log dir of one broker."""

    def __init__(self, log_dirs: tuple[str, ...]) -> None:
        self._dirs = {str(d): LogDirCheckpoints.load(d) for d in log_dirs}
        self._dir_of: dict[TopicPartition, str] = {}

    def place(self, tp: TopicPartition, log_dir: str) -> PartitionCheckpoint:
        """Note that `tp` lives in `log_dir`; returns what that dir's checkpoints hold for it."""
        self._dir_of[tp] = str(log_dir)
        cps = self._dirs[str(log_dir)]
        return PartitionCheckpoint(cps.recovery_points.get(tp), cps.log_start_offsets.get(tp),
                                   cps.cleaner_offsets.get(tp), cps.high_watermarks.get(tp))

    def update(self, tp: TopicPartition, *, recovery_point: int | None = None,
               log_start_offset: int | None = None, cleaner_offset: int | None = None,
               high_watermark: int | None = None) -> None:
        """Take a partition's current values (None leaves a value as it is)."""
        log_dir = self._dir_of.get(tp)
        if log_dir is None:
            return
        cps = self._dirs[log_dir]
        for value, table in ((recovery_point, cps.recovery_points), (log_start_offset, cps.log_start_offsets),
                             (cleaner_offset, cps.cleaner_offsets), (high_watermark, cps.high_watermarks)):
            if value is not None and value >= 0:
                table[tp] = value

    def move(self, tp: TopicPartition, log_dir: str) -> None:
        """`tp`'s log moved to `log_dir` (AlterReplicaLogDirs): its entries move with it, so the
        next writes put them in that dir's files (the old dir's drop them once its directory is gone)."""
        old = self._dir_of.get(tp)
        self._dir_of[tp] = str(log_dir)
        # Not placed yet (a swap finished at the broker's start): from whichever other dir has it.
        sources = [old] if old is not None else [d for d, cps in self._dirs.items() if tp in cps.recovery_points
                                                 or tp in cps.log_start_offsets or tp in cps.cleaner_offsets
                                                 or tp in cps.high_watermarks]
        src, dst = next((self._dirs[d] for d in sources if d != str(log_dir)), None), self._dirs[str(log_dir)]
        if src is None:
            return
        for a, b in ((src.recovery_points, dst.recovery_points), (src.log_start_offsets, dst.log_start_offsets),
                     (src.cleaner_offsets, dst.cleaner_offsets), (src.high_watermarks, dst.high_watermarks)):
            if tp in a:
                b[tp] = a[tp]

    def cleaner_offset(self, tp: TopicPartition) -> int | None:
        log_dir = self._dir_of.get(tp)
        return None if log_dir is None else self._dirs[log_dir].cleaner_offsets.get(tp)

    def forget(self, tp: TopicPartition) -> None:
        """The partition's log was deleted: drop it from every file at the next write."""
        log_dir = self._dir_of.pop(tp, None)
        for d, cps in self._dirs.items():
            if log_dir is None or d == log_dir:
                cps.forget(tp)

    def write(self, *, recovery_points: bool = True, log_start_offsets: bool = True,
              cleaner_offsets: bool = True, skip_dirs: frozenset[str] = frozenset()) -> dict[str, str]:
        """Rewrite the chosen files of every log dir but `skip_dirs` (failed ones); returns the
        dirs whose write failed (OSError: a full or broken disk), with the error, after trying
        every other dir. (`snapshot`, `write_snapshot` and `prune`, in this order, do the same
        with the files written in another thread.)

        Entries of partitions whose directory is gone from the log dir are dropped, as Kafka
        writes only the logs it holds.
        """
        failed, gone = self.write_snapshot(self.snapshot(skip_dirs), recovery_points=recovery_points,
                                           log_start_offsets=log_start_offsets, cleaner_offsets=cleaner_offsets)
        self.prune(gone)
        return failed

    def snapshot(self, skip_dirs: frozenset[str] = frozenset()) -> list[LogDirCheckpoints]:
        """Copies of the tables of every log dir but `skip_dirs`, taken where they change (the
        broker's event loop), for `write_snapshot` to write in another thread: iterating the
        live tables there raced with the loop adding partitions."""
        return [LogDirCheckpoints(cps.log_dir, dict(cps.recovery_points), dict(cps.log_start_offsets),
                                  dict(cps.cleaner_offsets), dict(cps.high_watermarks))
                for log_dir, cps in self._dirs.items() if log_dir not in skip_dirs]

    @staticmethod
    def write_snapshot(snapshot: list[LogDirCheckpoints], *, recovery_points: bool = True,
                       log_start_offsets: bool = True, cleaner_offsets: bool = True,
                       ) -> tuple[dict[str, str], dict[str, set[TopicPartition]]]:
        """Write the chosen files of each log dir of `snapshot`, without the partitions whose
        directory is gone. Returns the dirs whose write failed, with why, and the partitions
        found gone in each dir (for `prune`)."""
        failed: dict[str, str] = {}
        gone: dict[str, set[TopicPartition]] = {}
        for cps in snapshot:
            root = cps.log_dir
            gone[str(root)] = {tp for table in (cps.recovery_points, cps.log_start_offsets, cps.cleaner_offsets,
                                                cps.high_watermarks) for tp in table if not (root / str(tp)).is_dir()}
            for tp in gone[str(root)]:
                cps.forget(tp)
            try:
                if root.is_dir():
                    cps.write(recovery_points=recovery_points, log_start_offsets=log_start_offsets,
                              cleaner_offsets=cleaner_offsets)
            except OSError as e:
                failed[str(root)] = describe_os_error(e)
        return failed, gone

    def prune(self, gone: dict[str, set[TopicPartition]]) -> None:
        """Drop the entries of partitions a write found gone, unless their directory is back."""
        for log_dir, tps in gone.items():
            cps = self._dirs.get(log_dir)
            for tp in tps:
                if cps is not None and not (Path(log_dir) / str(tp)).is_dir():
                    cps.forget(tp)
