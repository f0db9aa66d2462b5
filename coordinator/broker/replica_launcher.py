"""`RayReplicaLauncher`: starts, orders and stops one broker's `PartitionReplica` actors.

The reconciler decides; this module does the Ray side of each step for one partition:
- start: give the partition a spare replica process (or create one, pinned to the broker's
  node), its log dir chosen, and wait until its log is open and its data socket listens; a
  replica that fails to open is killed, so the next try starts from a fresh process. The
  broker keeps `spares` processes started ahead of need (a process takes 0.3 s to seconds to
  start; opening a log in one takes milliseconds), refilled in the background while the
  machine has a core to spare (`idle_cpu.py`), and a replica that closes to go dormant gives
  its process back to them; a quiet broker keeps none (`spare_demand.py`: an idle Ray worker
  still costs 0.5-1% of a core);
- become: hand it a LeaderAndIsr order;
- watch: learn of its process's death (an outstanding call that fails);
- stop: close it (flush, clean-shutdown marker) and kill it; delete its directory when its
  topic was deleted; or stop it for a restart (`stop`);
- place: a partition not created yet goes to the log dir AlterReplicaLogDirs asked for, if any;
- dormant: a replica without a process (`replica.dormant.after.ms`): its directory claimed, its
  topic id checked and its closed log read (`closed_log.py`), its new leader epochs written.
Blocking calls (`rmtree`, file reads) run in threads.
"""
from __future__ import annotations

import asyncio
import logging
import math
import shutil
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, Collection

import ray

from rafka.actors.naming import replica_name
from rafka.actors.ray_env import pin_to_node
from rafka.actors.sent_handle import SentHandle
from rafka.common.config import LogConfig
from rafka.common.errors import ErrorCode
from rafka.common.types import TopicPartition
from rafka.coordinator.broker.control_calls import CONTROL_CALL_TIMEOUT_S
from rafka.coordinator.broker.dormant_logs import open_dormant_log, with_leader_epoch
from rafka.coordinator.broker.idle_cpu import IdleCpu
from rafka.coordinator.broker.spare_demand import SpareDemand
from rafka.partition_worker.broker_checkpoints import PartitionCheckpoint
from rafka.partition_worker.closed_log import ClosedLog, read_closed_log
from rafka.partition_worker.data_channel import socket_path
from rafka.partition_worker.log_dirs import choose_log_dir, find_partition_dir
from rafka.partition_worker.replica_actor import PartitionReplica
from rafka.partition_worker.replica_state import LeaderAndIsr

ReplicaActor = ray.remote(PartitionReplica)
log = logging.getLogger(__name__)

SPARE_SLACK = 2   # released processes are kept as spares up to this many times replica.spare.processes
# Spare processes start this many at a time: on 2 cores, four starting at once are all ready
# after ~1.6 s, two at a time give the first two in ~0.6 s (a start waiting for one takes the first).
SPARE_STARTS_AT_ONCE = 2
# How often a broker short of spares looks whether the machine has a core to spare for one.
IDLE_CHECK_S = 0.5
SPARE_START_TIMEOUT_S = 120.0   # a new process on a loaded machine
# ... and how long a spare waits for one at most while starts keep finding the pool empty: a
# machine that stays busy creating topic after topic (a client suite) still gets its pool
# back, so its next new partitions open at once. A busy machine whose starts find spares (a
# client that creates a topic now and then, and deletes others, whose processes come back as
# spares) waits for an idle core: a process start takes ~0.5-1 s of a core, and on 2 cores a
# spare started beside end-to-end latency runs at 2,000 records/s held their records up by
# 20-200 ms for 0.3-1.7 s. "Keep finding it empty" means a start did in the last half of the
# wait (`_missed_at`).
IDLE_WAIT_MAX_S = 5.0


def _log_lending_failure(lending: asyncio.Future) -> None:
    if not lending.cancelled() and lending.exception() is not None:   # a new process does as well, slower
        log.warning("could not rest an idle replica for its process: %r", lending.exception())


@dataclass(frozen=True)
class LaunchedReplica:
    """A running replica: its actor handle, data socket, log dir and process id, and when its
    log was open (time.monotonic(); it has been idle at most since then). `sent`: the handle as
    the front end is told of it (`SentHandle`, pickled once)."""

    actor: Any
    socket: str
    log_dir: str
    pid: int
    opened_at: float = field(default_factory=time.monotonic, compare=False)
    sent: Any = field(default=None, compare=False)


class RayReplicaLauncher:
    """The Ray steps of the replica reconciler, for one broker."""

    def __init__(self, broker_id: int, log_dirs: tuple[str, ...], namespace: str, node_id: str | None,
                 coordinator: str | None = None, failed_dirs: Collection[str] = (), spares: int = 0,
                 quiet_after_s: float | None = None) -> None:
        self._broker_id = broker_id
        self._failed_dirs = failed_dirs   # the broker's (a live view): new partitions go elsewhere
        # The coordinator's actor name, handed to each replica (its ISR changes go through it). Not
        # its handle: unpickling a handle makes Ray import the actor's class, and with it the whole
        # coordinator and front end (~5.5 MiB in every replica process).
        self._coordinator = coordinator
        self._log_dirs = log_dirs
        self._namespace = namespace
        self._node_id = node_id
        self._preferred: dict[TopicPartition, str] = {}   # log dir for a partition not created yet
        self._demand = SpareDemand(spares, quiet_after_s)
        self._spares: list[Any] = []   # replica processes without a partition, ready to open one
        self._trim: asyncio.TimerHandle | None = None   # ends the spares a quiet broker does not keep
        # Whether processes will come back from rests soon (wakes wait for room under
        # replica.max.live.processes): then starts take those instead of new ones.
        self.rests_coming: Callable[[], bool] = lambda: False
        # Rests the live replica idle longest, if one is idle long enough (True if one rested): its
        # process serves a start that found no spare (`_process_without_spare`). None: never.
        self.borrow: Callable[[], Awaitable[bool]] | None = None
        self._claims: deque[asyncio.Future] = deque()   # starts waiting for a process (spare or lent)
        self._creating: set[asyncio.Task] = set()   # spare processes being started
        self._spare_starts = asyncio.Semaphore(SPARE_STARTS_AT_ONCE)
        # Spares ahead of need start one at a time, each once the machine had a core idle.
        self.idle_cpu = IdleCpu()
        self.idle_check_s = IDLE_CHECK_S
        self.idle_wait_max_s = IDLE_WAIT_MAX_S
        self._ahead: asyncio.TimerHandle | None = None   # the next look for an idle core
        self._ahead_since = 0.0   # when the spare started next began waiting for one
        self._missed_at = -math.inf   # when a start last found no spare ready (loop time)
        self._stopped = False

    def prefer(self, tp: TopicPartition, log_dir: str) -> None:
        """Create `tp`'s log in `log_dir` if this broker creates it later (Kafka's preferred log dir)."""
        self._preferred[tp] = log_dir

    async def start(self, tp: TopicPartition, topic_id: uuid.UUID | None, config: LogConfig,
                    place: Callable[[TopicPartition, str], PartitionCheckpoint]) -> LaunchedReplica:
        """Start the replica of `tp` in a spare process (or a new one) and wait until it serves.
        Raises on failure, after killing the process."""
        log_dir = self._claim_log_dir(tp)
        checkpoint = place(tp, log_dir)
        socket = socket_path(self._namespace, replica_name(self._broker_id, tp), log_dir, topic_id)
        self._demand.taken()
        actor = self._spares.pop() if self._spares else await self._process_without_spare()
        self.refill()
        try:
            answer = await actor.open.remote(tp, log_dir, config, socket, checkpoint, topic_id)
        except BaseException:
            ray.kill(actor)
            raise
        return LaunchedReplica(actor, answer["socket"], log_dir, answer["pid"], sent=SentHandle.of(actor))

    async def _process_without_spare(self) -> Any:
        """A process for a start that found no spare ready, whichever comes first: a spare
        process already starting (they start `SPARE_STARTS_AT_ONCE` at a time, so the first is
        ready in a fraction of the time all would take), or the process of a live replica idle
        long enough, put to rest for it by `borrow` (~0.1 s: its partition stays online,
        dormant). Processes go to the waiting starts oldest first. A new process of its own
        only when neither can come (no spare starting, no replica to rest)."""
        if self._stopped:
            return self._new_process()
        self._missed_at = asyncio.get_running_loop().time()
        claim = asyncio.get_running_loop().create_future()
        self._claims.append(claim)
        self.refill()   # (counts the claim: a spare starts for it, unless enough already do)
        lending = None
        if self.borrow is not None:
            lending = asyncio.ensure_future(self.borrow())   # (goes on to publish the rest: not awaited)
            lending.add_done_callback(_log_lending_failure)
        try:
            while not claim.done():
                coming = [t for t in (*self._creating, lending) if t is not None and not t.done()]
                if not coming:
                    break
                await asyncio.wait([claim, *coming], return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:   # (the start gave up: a process handed over is a spare again)
            if claim.done() and not claim.cancelled():
                self._spares.append(claim.result())
            self._drop_claim(claim)
            raise
        if claim.done():
            return claim.result()
        self._drop_claim(claim)
        return self._spares.pop() if self._spares else self._new_process()

    def _drop_claim(self, claim: asyncio.Future) -> None:
        if claim in self._claims:
            self._claims.remove(claim)
        claim.cancel()

    def _new_process(self) -> Any:
        """A replica process without a partition, pinned to this broker's node."""
        return ReplicaActor.options(num_cpus=0, max_concurrency=1000, **pin_to_node(self._node_id)).remote(
            self._broker_id, coordinator=(self._coordinator, self._namespace) if self._coordinator else None)

    # -- spare processes -------------------------------------------------------------------
    def refill(self) -> None:
        """Start a process for each start waiting for one that no spare on its way will serve,
        at once; and the spare processes missing from the target ahead of need, one at a time
        whenever the machine has a core to spare (`idle_cpu.py`). In the background: nothing
        waits for them. Not while rests are about to hand processes back: a process started
        then would be one too many, and ended again."""
        if self._stopped or self.rests_coming():
            self._trim_when_quiet()
            return
        for _ in range(len(self._claims) - len(self._creating)):
            self._spawn_spare()
        if self._missing() > 0 and self._ahead is None:
            self.idle_cpu.idle_cores()   # (the look to compare the next one with)
            self._ahead_since = asyncio.get_running_loop().time()
            self._ahead = asyncio.get_running_loop().call_later(self.idle_check_s, self._start_ahead_if_idle)
        self._trim_when_quiet()

    def _missing(self) -> int:
        """Processes short of the target spares and the starts waiting for one."""
        return self._demand.wanted() + len(self._claims) - len(self._spares) - len(self._creating)

    def _start_ahead_if_idle(self) -> None:
        """Start one spare ahead of need if the machine had a core idle since the last look, or
        the spare has waited `idle_wait_max_s` for one while starts kept finding no spare (one
        did in the last half of that wait); look again
        later while spares are missing (after this one is ready, if one started)."""
        self._ahead = None
        if self._stopped or self._missing() <= 0:
            return
        loop = asyncio.get_running_loop()
        idle = self.idle_cpu.has_a_core_to_spare()
        waited_enough = (loop.time() - self._ahead_since >= self.idle_wait_max_s
                         and loop.time() - self._missed_at <= self.idle_wait_max_s / 2)
        if self.rests_coming() or not (idle or waited_enough):
            self._ahead = loop.call_later(self.idle_check_s, self._start_ahead_if_idle)
            return
        self._spawn_spare().add_done_callback(lambda _: self.refill())

    def _spawn_spare(self) -> asyncio.Task:
        task = asyncio.ensure_future(self._start_spare())
        self._creating.add(task)
        task.add_done_callback(self._creating.discard)
        return task

    def _trim_when_quiet(self) -> None:
        """Once the broker is quiet (no spare taken for replica.dormant.after.ms), end the spares
        beyond those it keeps then (none); checked again whenever a start or a rest changes the pool."""
        if self._trim is not None or self._stopped:
            return
        delay = self._demand.quiet_in_s()
        if delay is not None and len(self._spares) + len(self._creating) > self._demand.when_quiet:
            self._trim = asyncio.get_running_loop().call_later(delay + 0.1, self._trim_now)

    def _trim_now(self) -> None:
        self._trim = None
        if self._stopped:
            return
        surplus = len(self._spares) - self._demand.wanted()
        if self._demand.quiet() and surplus > 0:
            log.info("broker %d is quiet: ending %d of its %d spare replica processes",
                     self._broker_id, surplus, len(self._spares))
            for _ in range(surplus):
                ray.kill(self._spares.pop(0))
        elif not self._demand.quiet():
            self._trim_when_quiet()   # busy again meanwhile: check later (a spare still starting
            # checks again once it is ready)

    async def _start_spare(self) -> None:
        async with self._spare_starts:
            actor = self._new_process()
            try:
                await asyncio.wait_for(actor.__ray_ready__.remote(), SPARE_START_TIMEOUT_S)
            except Exception as e:  # noqa: BLE001 - the node is short of something: starts make their own
                log.warning("could not start a spare replica process: %r", e)
                ray.kill(actor)
                return
        if self._stopped:
            ray.kill(actor)
        elif self._claims:
            self._claims.popleft().set_result(actor)
        else:
            self._spares.append(actor)
            self._trim_when_quiet()

    @property
    def spares(self) -> int:
        """Spare replica processes ready now."""
        return len(self._spares)

    @property
    def spares_starting(self) -> int:
        """Replica processes starting now (spares, or for a start waiting for one)."""
        return len(self._creating)

    async def spare_pids(self) -> list[int]:
        """The process ids of the spare replica processes."""
        return list(await asyncio.wait_for(asyncio.gather(*[a.pid.remote() for a in self._spares]),
                                           CONTROL_CALL_TIMEOUT_S))

    def release(self, replica: LaunchedReplica, wanted: bool = False) -> None:
        """A replica closed cleanly (it went dormant, or its topic was deleted): its process goes
        to the start waiting longest for one (`_process_without_spare`), or becomes a spare while
        they are fewer than twice the number wanted now (wakes and rests come in waves: a process
        ended now would be started again for the next wake, at ~1 s of a core) or a start is
        `wanted` (one waits for its turn), else it ends."""
        if self._claims and not self._stopped:
            self._claims.popleft().set_result(replica.actor)
            return
        keep = SPARE_SLACK * self._demand.wanted()
        if not self._stopped and (wanted or len(self._spares) < keep):
            self._spares.append(replica.actor)
        else:
            ray.kill(replica.actor)
        while len(self._spares) > keep and not wanted:   # (a burst is over)
            ray.kill(self._spares.pop(0))
        self._trim_when_quiet()

    def stop_spares(self) -> None:
        """The broker stops: end the spare processes."""
        self._stopped = True
        for timer in (self._trim, self._ahead):
            if timer is not None:
                timer.cancel()
        self._trim = self._ahead = None
        for actor in self._spares:
            ray.kill(actor)
        self._spares.clear()

    def _claim_log_dir(self, tp: TopicPartition) -> str:
        """The log dir of `tp`: AlterReplicaLogDirs' preferred one for a partition not created
        yet, else the one `choose_log_dir` picks. Claimed (its directory made) before the next
        partition chooses, with no await in between: partitions started together spread over
        the log dirs rather than all picking the emptiest one."""
        preferred = self._preferred.pop(tp, None)
        if preferred is not None and preferred not in self._failed_dirs \
                and find_partition_dir(self._log_dirs, tp) is None:
            log_dir = preferred
        else:
            log_dir = choose_log_dir(self._log_dirs, tp, failed=self._failed_dirs)
        (Path(log_dir) / str(tp)).mkdir(parents=True, exist_ok=True)
        return log_dir

    # -- dormant replicas -----------------------------------------------------------------
    async def open_dormant(self, tp: TopicPartition, topic_id: uuid.UUID | None, role: LeaderAndIsr,
                           place: Callable[[TopicPartition, str], PartitionCheckpoint]) -> ClosedLog | None:
        """Take `tp` on without a process when that loses nothing: a new partition (no directory
        yet, any role), or a leader whose log was closed cleanly with the high watermark at its
        end (or the only replica). None: start the replica (a log to recover, a follower that
        may have to truncate).
        Raises when the directory belongs to another topic id, as the replica would."""
        existing = find_partition_dir(self._log_dirs, tp)
        if existing is None:
            log_dir = self._claim_log_dir(tp)   # (on this loop, before the next one chooses)
        elif role.leader != self._broker_id:
            return None
        else:
            log_dir = existing
        return await asyncio.to_thread(open_dormant_log, self._broker_id, tp, topic_id, role, place(tp, log_dir),
                                       Path(log_dir) / str(tp), existing is None)

    async def reopen_dormant(self, replica: LaunchedReplica, status: Any,
                             place: Callable[[TopicPartition, str], PartitionCheckpoint]) -> ClosedLog | None:
        """The closed log of a replica that has just closed cleanly (its last `status`)."""
        tp = TopicPartition(status.topic, status.partition)
        place(tp, replica.log_dir)
        return await asyncio.to_thread(read_closed_log, Path(replica.log_dir) / str(tp),
                                       log_start_offset=status.log_start_offset,
                                       high_watermark=status.high_watermark)

    async def take_role_dormant(self, closed: ClosedLog, role: LeaderAndIsr) -> ClosedLog:
        """A dormant replica's new role (`replica_plan.dormant_takes` said it needs no process)."""
        return await asyncio.to_thread(with_leader_epoch, self._broker_id, closed, role)

    async def died(self, replica: LaunchedReplica) -> bool:
        """Waits until the replica ends: True if its process died, False on a clean close."""
        try:
            await replica.actor.await_close.remote()
        except ray.exceptions.RayActorError:
            return True
        return False

    async def become(self, replica: LaunchedReplica, order: LeaderAndIsr) -> ErrorCode:
        return await replica.actor.become.remote(order)

    async def update_config(self, replica: LaunchedReplica, config: LogConfig) -> None:
        await asyncio.wait_for(replica.actor.update_config.remote(config), CONTROL_CALL_TIMEOUT_S)

    async def idle_for_ms(self, replica: LaunchedReplica) -> float:
        """How long the replica has been idle (quiet: nothing under way, no append in the retry horizon)."""
        return await replica.actor.idle_for_ms.remote()

    async def mark_log_dir_offline(self, replica: LaunchedReplica, reason: str) -> None:
        """Tell the replica its log dir failed: it takes no more writes."""
        await asyncio.wait_for(replica.actor.mark_log_dir_offline.remote(reason), CONTROL_CALL_TIMEOUT_S)

    async def close(self, replica: LaunchedReplica) -> Any:
        """Clean close (flush, clean-shutdown marker); returns the replica's last status."""
        return await replica.actor.close.remote()

    def kill(self, replica: LaunchedReplica) -> None:
        ray.kill(replica.actor)

    async def stop(self, tp: TopicPartition, replica: LaunchedReplica) -> Any:
        """Clean close and kill, for a restart: returns the replica's last status."""
        status = await self.close(replica)
        self.kill(replica)
        return status

    async def delete(self, tp: TopicPartition, replica: LaunchedReplica | None) -> None:
        """Stop the replica of a deleted topic (if one runs; its process goes back to the spares)
        and remove its directory."""
        if replica is not None:
            try:
                await self.close(replica)
            except Exception:  # noqa: BLE001 - a dead replica is already closed
                self.kill(replica)
            else:   # a process that closed its log cleanly opens the next partition as a spare does
                self.release(replica)
        log_dir = replica.log_dir if replica is not None else find_partition_dir(self._log_dirs, tp)
        if log_dir is not None:
            await asyncio.to_thread(shutil.rmtree, Path(log_dir) / str(tp), True)
