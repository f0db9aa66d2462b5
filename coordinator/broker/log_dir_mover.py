"""`ReplicaLogDirs`: a broker's DescribeLogDirs and AlterReplicaLogDirs (KIP-113).

Kafka moves a replica between the log dirs of its broker online: a future log in the
destination catches up with the current one while it keeps serving, then the two swap. Here
each move is a task:
1. copy rounds (`DirCopier`, in a thread, at most replica.alter.log.dirs.io.max.bytes.per.second
   across all moves) bring `<topic>-<p>.<uuid>-future` in the destination up to date while the
   replica serves produce and fetch; after each round DescribeLogDirs shows the future log with
   its lag (the replica's log end minus the future's);
2. once a round copies little (`SMALL_ROUND_BYTES`), the reconciler restarts the replica
   (`ReplicaReconciler.restart_replica`): the front end stops routing to it (clients see
   LEADER_NOT_AVAILABLE / NOT_LEADER_OR_FOLLOWER and retry), the replica closes cleanly (flush,
   producer snapshot, clean-shutdown marker), a last round copies the tail, the dirs swap
   (`swap_in_future`), the partition's checkpointed values follow it to the new dir, and the
   replica starts again in the destination with its role. Idempotent producers' retries are
   recognised by the restarted replica (its producer state came along), so nothing
   acknowledged is lost or written twice;
3. the old log, now `<topic>-<p>.<uuid>-delete`, goes after file.delete.delay.ms.
A broker that stops mid-way finds, at its next start (`recover_moves`), a swap to finish, a
copy to resume once the replica runs, or leftovers to remove.

A move to another dir replaces a move under way (its future dir removed); a move to the dir
the replica is in cancels it (Kafka's futureReplicaDirChanged). No log dir is ever marked
offline as a whole yet: `offline_dirs` is the hook (always empty today) through which a
failed disk would answer KAFKA_STORAGE_ERROR for its dir.

Async, on the coordinator's event loop; file work runs in threads.
"""
from __future__ import annotations

import asyncio
import logging
import shutil
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AbstractSet, Awaitable, Callable, Mapping

from rafka.common.errors import ErrorCode
from rafka.common.types import TopicPartition
from rafka.coordinator.broker import log_dir_plan as plan
from rafka.coordinator.broker.log_maintenance import LogMaintenance
from rafka.coordinator.broker.reconciler import ReplicaReconciler
from rafka.partition_worker import log_dir_moves as moves
from rafka.partition_worker.log_dirs import find_partition_dir

SMALL_ROUND_BYTES = 1 << 20     # a round that copied less than this ends the bulk phase
MAX_BULK_ROUNDS = 50            # then the pause copies what is left, whatever it is
WAIT_RUNNING_S = 0.5            # how often a resumed move looks whether its replica runs yet
STATUS_TIMEOUT_S = 10.0


@dataclass
class Move:
    """One replica's move to `log_dir` (a configured log dir)."""

    tp: TopicPartition
    log_dir: str
    move_id: str
    task: asyncio.Task | None = None
    swapping: bool = False
    source_dir: str | None = None
    offset_lag: int = plan.INVALID_OFFSET_LAG
    done: asyncio.Event = field(default_factory=asyncio.Event)


class ReplicaLogDirs:
    """The log dirs of one broker: describing them and moving its replicas between them."""

    def __init__(self, log_dirs: tuple[str, ...], reconciler: ReplicaReconciler, maintenance: LogMaintenance,
                 logger: logging.LoggerAdapter | logging.Logger, *,
                 topic_id: Callable[[TopicPartition], uuid.UUID | None],
                 known: Callable[[TopicPartition], bool],
                 hosted: Callable[[TopicPartition], bool | None],
                 publish: Callable[[], Awaitable[None]],
                 prefer: Callable[[TopicPartition, str], None],
                 io_max_bytes_per_s: int, file_delete_delay_ms: int,
                 offline_dirs: Callable[[], AbstractSet[str]] = frozenset) -> None:
        self._dirs = {a: d for a, d in zip(plan.absolute_log_dirs(log_dirs), log_dirs)}   # absolute -> configured
        self._reconciler = reconciler
        self._maintenance = maintenance
        self._log = logger
        self._topic_id = topic_id
        self._known = known            # the partition is in the cluster's metadata
        self._hosted = hosted          # ... with a replica on this broker (None: no metadata yet)
        self._publish = publish        # the front end and the controller learn of the local replicas again
        self._prefer = prefer
        self._throttle = moves.IoThrottle(io_max_bytes_per_s)
        self._delete_delay_s = file_delete_delay_ms / 1000
        self._offline_dirs = offline_dirs
        self.moves: dict[TopicPartition, Move] = {}
        self._stopped = False

    # -- DescribeLogDirs -----------------------------------------------------------------
    async def describe(self, wanted: set[TopicPartition] | None) -> list[plan.LogDirDescription]:
        scanned = await asyncio.to_thread(lambda: [_scan(a, d) for a, d in self._dirs.items()])
        return plan.describe(scanned, wanted, offline_dirs=self._offline_dirs(),
                             offline_replicas={o.tp for o in self._reconciler.offline()},
                             future_lags={tp: m.offset_lag for tp, m in self.moves.items()})

    # -- AlterReplicaLogDirs ---------------------------------------------------------------
    async def alter(self, requests: Mapping[TopicPartition, str]) -> dict[TopicPartition, ErrorCode]:
        """Start (or replace, or cancel) a move per partition; the answer per partition."""
        out = {}
        for tp, destination in requests.items():
            if tp in self._reconciler.dormant and destination in self._dirs:   # a move needs its process
                if await self._reconciler.wake(tp, self._topic_id(tp)):
                    await self._publish()
            code = plan.check_move(tp, destination, log_dirs=self._dirs.keys(), offline_dirs=self._offline_dirs(),
                                   offline_replicas={o.tp for o in self._reconciler.offline()},
                                   running=self._reconciler.replicas.keys(), known=self._known(tp))
            if code in (ErrorCode.REPLICA_NOT_AVAILABLE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
                self._prefer(tp, self._dirs[destination])   # Kafka's preferred dir: created there later
            if code is not ErrorCode.NONE:
                self._log.warning("Unable to alter log dirs for %s: %s (%s)", tp, code.name,
                                  plan.error_message(code, tp, destination))
                out[tp] = code
                continue
            await self._start_move(tp, self._dirs[destination])
            out[tp] = ErrorCode.NONE
        return out

    async def _start_move(self, tp: TopicPartition, log_dir: str, move_id: str | None = None) -> None:
        current = self.moves.get(tp)
        if current is not None and current.log_dir == log_dir:
            return   # already going there
        if current is not None:
            await self._cancel(current)
        if move_id is None and self._current_dir(tp) == log_dir:
            self._log.info("Current log directory %s of %s is same as requested log dir; nothing to move", log_dir, tp)
            return
        move = Move(tp, log_dir, move_id or moves.new_move_id())
        move.task = asyncio.ensure_future(self._run(move))
        self.moves[tp] = move
        self._log.info("moving replica %s to log dir %s (future dir %s)", tp, log_dir,
                       moves.future_dir(tp, move.move_id).name)

    async def _cancel(self, move: Move) -> None:
        """Stop a move; one already swapping is let finish."""
        if move.swapping:
            await move.done.wait()
            return
        if move.task is not None:
            move.task.cancel()
        await move.done.wait()

    async def recover(self, log_dirs: tuple[str, ...]) -> None:
        """Moves that a stop cut short: swaps finished, copies resumed once their replica runs."""
        recovery = await asyncio.to_thread(moves.recover_moves, log_dirs)
        for log_dir, future in recovery.complete:
            self._maintenance.moved(future.tp, log_dir)
        if recovery.complete or recovery.resume or recovery.remove:
            self._log.info("log dir moves left by the last run: %d swaps finished, %d resumed, %d dirs removed",
                           len(recovery.complete), len(recovery.resume), len(recovery.remove))
        self.resume(recovery)

    def resume(self, recovery: moves.MoveRecovery) -> None:
        """The copies a broker stopped in the middle of: each goes on once its replica runs."""
        for log_dir, future in recovery.resume:
            configured = next((d for d in self._dirs.values() if str(d) == log_dir), log_dir)
            move = Move(future.tp, configured, future.move_id)
            move.task = asyncio.ensure_future(self._run(move))
            self.moves[future.tp] = move
            self._log.info("resuming the move of replica %s to log dir %s", future.tp, configured)

    def stop(self) -> None:
        """The broker is stopping: copies end where they are (resumed at the next start)."""
        self._stopped = True
        for move in self.moves.values():
            if move.task is not None and not move.swapping:
                move.task.cancel()

    # -- one move ------------------------------------------------------------------------
    def _current_dir(self, tp: TopicPartition) -> str | None:
        return find_partition_dir(tuple(self._dirs.values()), tp)

    async def _run(self, move: Move) -> None:
        tp = move.tp
        future = Path(move.log_dir) / moves.future_dir(tp, move.move_id).name
        keep_future = False
        try:
            if not await self._await_running(tp):
                self._log.warning("abandoning the move of %s: this broker no longer hosts it", tp)
                return
            source_dir = move.source_dir = self._current_dir(tp)
            if source_dir is None:
                return
            copier = moves.DirCopier(Path(source_dir) / str(tp), future, self._throttle)
            await self._note_lag(move, future)
            for _ in range(MAX_BULK_ROUNDS):
                copied = await asyncio.to_thread(copier.copy_round)
                await self._note_lag(move, future)
                if copied.bytes_copied < SMALL_ROUND_BYTES:
                    break
            move.swapping = True
            paused_at = time.monotonic()
            restarted = await self._reconciler.restart_replica(
                tp, self._topic_id(tp), before_stop=self._publish,
                while_stopped=lambda status: self._swap(move, copier, source_dir, status))
            if not restarted:
                self._log.warning("abandoning the move of %s: its replica stopped running", tp)
                return
            await self._publish()
            if tp in self._reconciler.replicas and self._current_dir(tp) == move.log_dir:
                self._log.info("The current replica of %s is successfully replaced with the future replica in %s "
                               "(the partition paused for %.2f s)", tp, move.log_dir, time.monotonic() - paused_at)
            else:
                self._log.warning("the move of %s to %s did not complete; its replica starts again where its "
                                  "log is", tp, move.log_dir)
        except asyncio.CancelledError:
            keep_future = self._stopped   # a stopping broker resumes it at its next start
            raise
        except FileNotFoundError as e:   # its log went while copied: the topic was deleted
            self._log.warning("abandoning the move of %s to %s: its log is gone (%s)", tp, move.log_dir, e)
        except Exception:  # noqa: BLE001 - this move only; the replica goes on where it was
            self._log.exception("the move of replica %s to %s failed", tp, move.log_dir)
        finally:
            if self.moves.get(tp) is move:
                del self.moves[tp]
            try:
                await asyncio.to_thread(self._settle, move, future, keep_future)
            finally:
                move.done.set()

    def _settle(self, move: Move, future: Path, keep_future: bool) -> None:
        """After a move ended (in a thread): a future dir left by a swap cut short after its first
        rename takes the current name (it is the partition's only complete log); any other is
        removed, unless the broker is stopping (its next start resumes it)."""
        if not future.exists():
            return
        source = move.source_dir
        if source is not None and (Path(source) / moves.PartitionDir(move.tp, moves.DirKind.DELETE,
                                                                      move.move_id).name).exists():
            moves.finish_swap(move.log_dir, move.tp, move.move_id)
            self._log.warning("finished the swap of %s into %s after a failure", move.tp, move.log_dir)
        elif not keep_future:
            shutil.rmtree(future, True)

    async def _await_running(self, tp: TopicPartition) -> bool:
        """Until the replica runs here; False once the metadata no longer gives it to this broker."""
        while tp not in self._reconciler.replicas:
            if self._hosted(tp) is False:
                return False
            if tp in self._reconciler.dormant and await self._reconciler.wake(tp, self._topic_id(tp)):
                await self._publish()
                continue
            await asyncio.sleep(WAIT_RUNNING_S)
        return True

    async def _note_lag(self, move: Move, future: Path) -> None:
        """The future log's lag behind the replica's log end, for DescribeLogDirs."""
        replica = self._reconciler.replicas.get(move.tp)
        if replica is None:
            return
        try:
            status = await asyncio.wait_for(replica.actor.status.remote(), STATUS_TIMEOUT_S)
            future_end = await asyncio.to_thread(moves.log_end_offset, future) if future.is_dir() else -1
        except Exception as e:  # noqa: BLE001 - only a figure to report; the copy goes on
            self._log.debug("could not measure the lag of the future log of %s: %r", move.tp, e)
            return
        # A future log without a segment yet starts where the current one starts.
        move.offset_lag = max(0, status.log_end_offset - (future_end if future_end >= 0 else status.log_start_offset))

    async def _swap(self, move: Move, copier: moves.DirCopier, source_dir: str, status: Any) -> None:
        """With the replica closed: the last copy round, the swap, the checkpoints moved along
        (its closing status gives them again: a checkpoint write during the swap, which saw the
        partition in neither dir, may have dropped them)."""
        await asyncio.to_thread(copier.copy_round, True)
        deleted = await asyncio.to_thread(moves.swap_in_future, source_dir, move.log_dir, move.tp, move.move_id)
        self._maintenance.moved(move.tp, move.log_dir)
        self._maintenance.take_statuses([move.tp], [status])
        await self._maintenance.write_checkpoints({}, ask_replicas=False)
        asyncio.get_running_loop().call_later(
            self._delete_delay_s, lambda: asyncio.ensure_future(asyncio.to_thread(shutil.rmtree, deleted, True)))


def _scan(absolute: str, configured: str) -> plan.ScannedLogDir:
    """One log dir's listing and volume space (in a thread); an unreadable dir carries its error."""
    try:
        space = moves.volume_space(configured)
        entries = tuple(moves.scan_log_dir(configured))
    except OSError:
        return plan.ScannedLogDir(absolute, error=ErrorCode.KAFKA_STORAGE_ERROR)
    return plan.ScannedLogDir(absolute, entries, space.total_bytes, space.usable_bytes)

