"""`ReplicaReconciler`: moves one broker's replicas toward the controller's metadata.

Each metadata push (Kafka's LeaderAndIsr + UpdateMetadata) and each due retry runs one
tick: `replica_plan.plan` says which partitions start, change role or stop, and each step
runs on its own, bounded in time, with its outcome recorded per partition. A replica that
fails to start, or whose process dies later (kill -9, the memory monitor), is reported (log
line, `offline()`, `rafka status`, the partition offline in this broker's metadata) and
started again with backoff on its own log; every other partition goes on (STYLE.md §11).
Starts run at most `max_parallel_starts` at a time, so a burst of new partitions never floods
the node with process creations.

Dormant replicas (`replica.dormant.after.ms`): a replica that has been idle that long says
so; `rest` closes it cleanly (after the front end stopped sending it requests) and keeps its
`ClosedLog`, from which the front end serves reads. A new partition, and a leader whose log
was closed cleanly with a known high watermark, start dormant: no process until a write.
`wake` starts the replica again (a write came); a LeaderAndIsr a dormant replica cannot take
without its process (`replica_plan.dormant_takes`) wakes it too. Wakes do not wait for a tick
(a produce waits on them); they and rests are ordered per partition.

Async; ticks never overlap (a lock), so the book changes in one place at a time. The Ray
side lives behind the launcher (`RayReplicaLauncher`), so this class is tested with a fake one.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from typing import Any, Awaitable, Callable, TypeVar

from rafka.common.config import LogConfig
from rafka.common.errors import ErrorCode, KafkaError
from rafka.common.metadata import ClusterMetadata
from rafka.common.types import TopicPartition
from rafka.coordinator.broker import replica_plan as rp
from rafka.coordinator.broker.launcher_protocol import Launcher
from rafka.coordinator.broker.live_cap import LiveReplicaCap
from rafka.coordinator.broker.log_maintenance import LogMaintenance
from rafka.coordinator.broker.tracked import ChangeCount, TrackedDict
from rafka.partition_worker.closed_log import ClosedLog
from rafka.partition_worker.replica_state import LeaderAndIsr

state_change = logging.getLogger("rafka.state_change")
T = TypeVar("T")

DEFAULT_STEP_TIMEOUT_S = 600.0   # opening a log may scan segments after an unclean stop
DEFAULT_MAX_PARALLEL_STARTS = 8


class ReplicaReconciler:
    """The book of a broker's replicas, and the ticks that move it toward its targets."""

    def __init__(self, broker_id: int, launcher: Launcher, maintenance: LogMaintenance,
                 topic_config: Callable[[str], Awaitable[LogConfig]], logger: logging.LoggerAdapter | logging.Logger,
                 *, step_timeout_s: float = DEFAULT_STEP_TIMEOUT_S,
                 max_parallel_starts: int = DEFAULT_MAX_PARALLEL_STARTS,
                 clock_ms: Callable[[], float] = lambda: time.monotonic() * 1000,
                 on_replica_lost: Callable[[], Awaitable[None]] | None = None,
                 on_leader_ready: Callable[[TopicPartition], None] | None = None,
                 dormancy: bool = False, cap: LiveReplicaCap | None = None) -> None:
        self._broker_id = broker_id
        self._launcher = launcher
        self._maintenance = maintenance
        self._topic_config = topic_config
        self._log = logger
        self._step_timeout_s = step_timeout_s
        self._starts = asyncio.Semaphore(max_parallel_starts)
        self._clock_ms = clock_ms
        self._on_replica_lost = on_replica_lost
        self._on_leader_ready = on_leader_ready
        self._watches: dict[TopicPartition, asyncio.Task] = {}
        self._lock = asyncio.Lock()
        # The tables below count their changes: `local_replicas()` is derived again only after one.
        self._changes = ChangeCount()
        self._local: tuple[int, rp.LocalReplicas | None] = (-1, None)
        self.book: dict[TopicPartition, rp.ReplicaEntry] = TrackedDict(self._changes)
        self.replicas: dict[TopicPartition, Any] = TrackedDict(self._changes)   # running replicas (launcher's handles)
        self.dormant: dict[TopicPartition, ClosedLog] = TrackedDict(self._changes)   # replicas without a process
        self._dormancy = dormancy   # replica.dormant.after.ms >= 0: new partitions start dormant
        self._cap = cap             # replica.max.live.processes: wakes take turns under it
        self._waking: dict[TopicPartition, asyncio.Future] = {}
        self._resting: dict[TopicPartition, asyncio.Future] = TrackedDict(self._changes)
        self._rests = asyncio.Semaphore(max_parallel_starts)
        self._waiting_starts = 0   # starts waiting for their turn: a resting replica's process serves one
        self.controller_epoch = -1
        self.rests = self.wakes = 0   # replicas put to rest and woken since the broker started (status)

    # -- ticks -----------------------------------------------------------------------
    async def apply(self, metadata: ClusterMetadata) -> ErrorCode:
        """One tick toward `metadata`; STALE_CONTROLLER_EPOCH (and nothing done) for metadata
        from a controller older than one already heard."""
        async with self._lock:
            if metadata.controller_epoch < self.controller_epoch:
                self._log.warning("ignoring metadata from stale controller epoch %d < %d",
                                  metadata.controller_epoch, self.controller_epoch)
                return ErrorCode.STALE_CONTROLLER_EPOCH
            self.controller_epoch = metadata.controller_epoch
            targets = rp.replica_targets(metadata, self._broker_id)
            steps = rp.plan(targets, self.book, self._clock_ms())
            if steps:
                await self._run(steps, targets, metadata)
            return ErrorCode.NONE

    async def _run(self, steps: rp.Plan, targets: dict[TopicPartition, LeaderAndIsr],
                   metadata: ClusterMetadata) -> None:
        def topic_id(tp: TopicPartition) -> uuid.UUID | None:
            info = metadata.topics.get(tp.topic)
            return None if info is None else info.topic_id

        work = ([(tp, self._start(tp, targets[tp], topic_id(tp), dormant_ok=self._dormancy)) for tp in steps.start]
                + [(tp, self._become_step(tp, targets[tp], topic_id(tp))) for tp in steps.become])
        stops = [self._stop(tp) for tp in steps.stop]
        outcomes = await asyncio.gather(*(self._bounded(step) for _, step in work),
                                        *(self._bounded(step) for step in stops), return_exceptions=True)
        for (tp, _), outcome in zip(work, outcomes):
            if isinstance(outcome, BaseException):
                self._failed(tp, outcome)
        for tp, outcome in zip(steps.stop, outcomes[len(work):]):
            if isinstance(outcome, BaseException):  # forgotten already: the files may remain
                self._log.error("could not remove replica %s of a deleted topic: %r", tp, outcome)
        if steps.start:
            running = sum(1 for tp in steps.start if tp in self.replicas)
            dormant = sum(1 for tp in steps.start if tp in self.dormant)
            self._log.info("started %d of %d partition replicas (%d more dormant: no process until a write)",
                           running, len(steps.start), dormant)

    async def _bounded(self, step: Awaitable[T]) -> T:
        return await asyncio.wait_for(step, self._step_timeout_s)

    async def _start(self, tp: TopicPartition, target: LeaderAndIsr, topic_id: uuid.UUID | None, *,
                     dormant_ok: bool = False) -> None:
        if dormant_ok:
            closed = await self._launcher.open_dormant(tp, topic_id, target, self._maintenance.place)
            if closed is not None:
                self.dormant[tp] = closed
                self.book[tp] = rp.dormant(target)
                if target.leader == self._broker_id and self._on_leader_ready is not None:
                    self._on_leader_ready(tp)
                return
        self._waiting_starts += 1
        try:
            await self._starts.acquire()
        finally:
            self._waiting_starts -= 1
        try:
            config = await self._topic_config(tp.topic)
            replica = await self._launcher.start(tp, topic_id, config, self._maintenance.place)
        finally:
            self._starts.release()
        if tp in self.dormant:
            await self._take_over_from_dormant(tp, replica, target)
            self._watches[tp] = asyncio.ensure_future(self._watch(tp, replica))
            self._maintenance.opened(tp, config)
            return
        self.replicas[tp] = replica
        self._watches[tp] = asyncio.ensure_future(self._watch(tp, replica))
        self._maintenance.opened(tp, config)
        previous = self.book.get(tp)
        if previous is not None and previous.phase is rp.Phase.FAILED:
            self._log.info("replica %s started after %d failed attempts", tp, previous.failures)
        self.book[tp] = rp.started(None)
        await self._become(tp, target)

    async def _take_over_from_dormant(self, tp: TopicPartition, replica: Any, target: LeaderAndIsr) -> None:
        """A woken replica takes its role before anyone routes to it; until then its partition
        stays dormant (the front end serves reads and holds writes), then it runs at once."""
        try:
            code = await self._launcher.become(replica, target)
        except BaseException:
            self._launcher.kill(replica)
            raise
        if code != ErrorCode.NONE:
            self._launcher.kill(replica)
            raise KafkaError(f"the woken replica refused leader epoch {target.leader_epoch}: {code.name}")
        self.replicas[tp] = replica
        self.dormant.pop(tp, None)
        self.book[tp] = rp.accepted(rp.started(None), target)
        if target.leader == self._broker_id and self._on_leader_ready is not None:
            self._on_leader_ready(tp)

    async def _become_step(self, tp: TopicPartition, target: LeaderAndIsr, topic_id: uuid.UUID | None) -> None:
        """A tick's BECOME: after a wake or a rest under way; a dormant replica takes the role
        without its process when it can, else it wakes with it."""
        await self._settled(tp)
        entry = self.book.get(tp)
        if entry is None or entry.phase is not rp.Phase.DORMANT:
            await self._become(tp, target)
        elif rp.dormant_takes(entry.role, target, self._broker_id):
            self.dormant[tp] = await self._launcher.take_role_dormant(self.dormant[tp], target)
            self.book[tp] = rp.accepted(entry, target)
            if target.leader == self._broker_id and self._on_leader_ready is not None:
                self._on_leader_ready(tp)
        else:
            await self.wake(tp, topic_id, role=target)

    async def _become(self, tp: TopicPartition, target: LeaderAndIsr) -> None:
        replica = self.replicas.get(tp)
        if replica is None:
            return   # died, or the broker is stopping: a later tick orders it again
        code = await self._launcher.become(replica, target)
        if code == ErrorCode.NONE:
            self.book[tp] = rp.accepted(self.book[tp], target)
            if target.leader == self._broker_id and self._on_leader_ready is not None:
                self._on_leader_ready(tp)   # served now, not when the whole tick is done
        else:
            state_change.warning("[Broker id=%d] replica %s refused leader_epoch %d from controller epoch %d: %s",
                                 self._broker_id, tp, target.leader_epoch, target.controller_epoch, code.name)

    async def _stop(self, tp: TopicPartition) -> None:
        await self._settled(tp)
        self.dormant.pop(tp, None)
        replica = self.replicas.pop(tp, None)
        watch = self._watches.pop(tp, None)
        if watch is not None:
            watch.cancel()
        self.book.pop(tp, None)
        self._maintenance.forget(tp)
        await self._launcher.delete(tp, replica)
        self._log.info("removed replica %s of a deleted topic", tp)

    async def _watch(self, tp: TopicPartition, replica: Any) -> None:
        """A running replica whose process dies is offline until a retry starts it again."""
        if not await self._launcher.died(replica):
            return
        async with self._lock:
            if self.replicas.get(tp) is not replica:
                return   # stopped or replaced meanwhile
            self._failed(tp, RuntimeError("the replica's process died"))
        del replica
        if self._on_replica_lost is not None:
            await self._on_replica_lost()

    async def restart_replica(self, tp: TopicPartition, topic_id: uuid.UUID | None, *,
                              before_stop: Callable[[], Awaitable[None]],
                              while_stopped: Callable[[Any], Awaitable[None]]) -> bool:
        """Stop the running replica of `tp` cleanly, run `while_stopped(its last status)` (a log
        dir move swaps its files), and start it again with its role, its log dir found anew.
        `before_stop` runs once the replica is out of `replicas` (the front end stops routing
        to it). Ticks wait meanwhile. False, with nothing done, when it does not run; a failed
        step leaves it offline (restarted later, as any failed start)."""
        async with self._lock:
            entry = self.book.get(tp)
            if tp not in self.replicas or entry is None or entry.role is None:
                return False
            # No reference to the replica is kept here: while its creator holds a handle, Ray
            # keeps a dead actor's name, and the new replica takes the same name.
            stopping = self._launcher.stop(tp, self.replicas.pop(tp))
            watch = self._watches.pop(tp, None)
            if watch is not None:
                watch.cancel()
            try:
                await self._bounded(before_stop())
                status = await self._bounded(stopping)
                self._maintenance.take_statuses([tp], [status])
                await self._bounded(while_stopped(status))
                await self._bounded(self._start(tp, entry.role, topic_id))
            except Exception as e:  # noqa: BLE001 - this partition only: offline, retried with backoff
                stopping.close()   # (not started if before_stop failed; its replica is adopted at the retry)
                self._failed(tp, e)
        return True

    # -- dormancy ------------------------------------------------------------------------
    async def _settled(self, tp: TopicPartition) -> None:
        """Once no wake or rest of `tp` is under way."""
        while (step := self._resting.get(tp) or self._waking.get(tp)) is not None:
            await asyncio.shield(step)

    async def rest(self, tp: TopicPartition, pid: int, quiesce: Callable[[], Awaitable[bool]]) -> bool:
        """The running replica of `tp` (process `pid`) has been idle: once `quiesce` (the front
        end stops sending it requests and drains those under way) says yes, close it cleanly
        and keep its closed log. False, with the replica left running, when it is not the one
        running, is starting or stopping, is resting already, or the front end could not drain
        it; a replica whose closed log cannot be read back starts again."""
        replica, entry = self.replicas.get(tp), self.book.get(tp)
        if (replica is None or getattr(replica, "pid", None) != pid or entry is None or self._lock.locked()
                or entry.phase is not rp.Phase.RUNNING or entry.role is None or tp in self._waking
                or tp in self._resting):
            return False   # (during a tick too: the replica says so again after another delay; a rest
            #                 under way already: a second one found it gone, KeyError, its wakes stuck)
        done = self._resting[tp] = asyncio.get_running_loop().create_future()
        async with self._rests:
            # Out of `replicas` first: a publication meanwhile shows it as closing, not running.
            self.replicas.pop(tp)
            try:
                if not await self._bounded(quiesce()):
                    self.replicas[tp] = replica
                    return False
                watch = self._watches.pop(tp, None)
                if watch is not None:
                    watch.cancel()
                try:
                    status = await self._bounded(self._launcher.close(replica))
                except BaseException:
                    self._launcher.kill(replica)
                    raise
                # Its process may serve another partition next
                # (a start waits for its turn, or a wake for room under replica.max.live.processes)
                wanted = self._waiting_starts > 0 or (self._cap is not None and self._cap.waiting > 0)
                self._launcher.release(replica, wanted=wanted)
                self._maintenance.take_statuses([tp], [status])
                closed = await self._launcher.reopen_dormant(replica, status, self._maintenance.place)
                del replica
                if closed is None:
                    self._log.warning("replica %s closed but its log does not read as closed; starting it again", tp)
                    await self._bounded(self._start(tp, entry.role, None))
                    return False
                self.dormant[tp] = closed
                self.book[tp] = rp.dormant(entry.role)
                self.rests += 1
                self._log.info("replica %s is dormant (idle): its process exited; log end %d", tp,
                               closed.log_end_offset)
                if self._cap is not None:
                    self._cap.rested()   # (a wake waiting for room may go)
                return True
            except Exception as e:  # noqa: BLE001 - this partition only: offline, started again with backoff
                self._failed(tp, e)
                return False
            finally:
                del self._resting[tp]
                done.set_result(None)

    async def wake(self, tp: TopicPartition, topic_id: uuid.UUID | None, role: LeaderAndIsr | None = None) -> bool:
        """Start the dormant replica of `tp` (with `role`, default its last one); True once it runs.
        Concurrent wakes share one start; a rest under way finishes first."""
        resting = self._resting.get(tp)
        if resting is not None:
            await asyncio.shield(resting)
        waking = self._waking.get(tp)
        if waking is not None:
            return await asyncio.shield(waking)
        entry = self.book.get(tp)
        if entry is None or entry.phase is not rp.Phase.DORMANT:
            return tp in self.replicas
        done = self._waking[tp] = asyncio.get_running_loop().create_future()
        woke = False
        asked_ms = self._clock_ms()
        try:
            async with self._cap.turn() if self._cap is not None else contextlib.nullcontext():
                turn_ms = self._clock_ms()
                await self._bounded(self._start(tp, role or entry.role, topic_id))
            woke = tp in self.replicas
        except Exception as e:  # noqa: BLE001 - this partition only: offline, started again with backoff
            self._failed(tp, e)
        finally:
            self.dormant.pop(tp, None)
            del self._waking[tp]
            done.set_result(woke)
        if woke:
            self.wakes += 1
            self._log.info("woke dormant replica %s in %.0f ms (%.0f of them waiting for room)", tp,
                           self._clock_ms() - asked_ms, turn_ms - asked_ms)
        return woke

    @property
    def ticking(self) -> bool:
        """Whether a tick (`apply`) is under way: no replica rests meanwhile."""
        return self._lock.locked()

    def forget_all(self) -> None:
        """Drop every replica from the book (the broker is stopping; they were closed)."""
        for task in self._watches.values():
            task.cancel()
        self._watches.clear()
        self.replicas.clear()

    def _failed(self, tp: TopicPartition, error: BaseException) -> None:
        """Record a failed step: the replica is offline until a retry starts it."""
        self.replicas.pop(tp, None)
        self.dormant.pop(tp, None)
        reason = str(error) or type(error).__name__
        entry = rp.failed(self.book.get(tp), reason, self._clock_ms())
        self.book[tp] = entry
        self._log.error("replica %s is offline: failed to start (attempt %d; retrying in %.1f s): %s",
                        tp, entry.failures, rp.retry_backoff_ms(entry.failures) / 1000, reason,
                        exc_info=None if isinstance(error, KafkaError) else error)

    # -- what the broker reports -----------------------------------------------------
    def local_replicas(self) -> rp.LocalReplicas:
        """Every table below at once, in one pass (what a publication takes), derived again
        only when the replica tables changed since the last time. Not to be modified."""
        if self._local[0] != self._changes.value:   # (-1 at first, so the first call derives them)
            self._local = (self._changes.value, rp.local_replicas(self.book, self.replicas, self.dormant,
                                                                   self._resting, self._broker_id))
        return self._local[1]

    def leaders(self) -> dict[TopicPartition, Any]:
        """Running replicas that lead their partition."""
        return self.local_replicas().leaders

    def dormant_leaders(self) -> dict[TopicPartition, ClosedLog | None]:
        """Dormant replicas that lead their partition: the front end serves them from their
        files. Those still closing are None (requests for them wait)."""
        return self.local_replicas().dormant_leaders

    def dormant_followers(self) -> dict[TopicPartition, ClosedLog | None]:
        """Dormant (or closing: None) replicas that follow a live leader on another broker."""
        return self.local_replicas().dormant_followers

    def offline(self) -> list[rp.OfflineReplica]:
        return rp.offline(self.book, self._clock_ms())

    def retry_in_s(self) -> float | None:
        """Seconds until the next failed replica is due for a retry; None when none waits."""
        due = rp.next_retry_ms({tp: self.book[tp] for tp in self.local_replicas().offline})
        return None if due is None else max(0.0, (due - self._clock_ms()) / 1000)
