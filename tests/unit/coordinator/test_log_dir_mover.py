"""`ReplicaLogDirs` over the real reconciler and real logs, with a stand-in for the Ray side:
a move copies while appends go on, swaps with the replica stopped, and the replica comes back
in the new dir with every batch; a move to the dir it is in changes nothing; a copy left by a
stopped broker is resumed."""
from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from rafka.common.config import BrokerConfig
from rafka.common.errors import ErrorCode
from rafka.common.metadata import BrokerInfo, ClusterMetadata, PartitionInfo, TopicInfo
from rafka.common.types import TopicPartition
from rafka.coordinator.broker.log_dir_mover import ReplicaLogDirs
from rafka.coordinator.broker.log_maintenance import LogMaintenance
from rafka.coordinator.broker.reconciler import ReplicaReconciler
from rafka.partition_worker import log_dir_moves as moves
from rafka.partition_worker.log import PartitionLog
from rafka.partition_worker.log_dirs import choose_log_dir
from rafka.partition_worker.messages import ReplicaStatus
from tests.unit.storage.replica_logs import ROLLING, workload

ME = 1
TP = TopicPartition("t", 0)
LOG = logging.getLogger("test")


class Remote:
    def __init__(self, call):
        self._call = call

    def remote(self, *args):
        async def run():
            return self._call(*args)
        return run()


class Replica:
    """A replica as the launcher hands it out: a real log in its dir, and an `actor.status`."""

    def __init__(self, log_dir: str) -> None:
        self.log_dir = log_dir
        self.log = PartitionLog.open(Path(log_dir) / str(TP), ROLLING)
        self.actor = self
        self.status = Remote(self._status)

    def _status(self) -> ReplicaStatus:
        return ReplicaStatus(TP.topic, TP.partition, ME, ME, 0, self.log.log_start_offset, self.log.log_end_offset,
                             self.log.log_end_offset, 0, self.log.recovery_point)


class Launcher:
    def __init__(self, log_dirs: tuple[str, ...]) -> None:
        self.log_dirs = log_dirs
        self.running: Replica | None = None

    async def start(self, tp, topic_id, config, place):
        log_dir = choose_log_dir(self.log_dirs, tp)
        place(tp, log_dir)
        self.running = Replica(log_dir)
        return self.running

    async def become(self, replica, order):
        return ErrorCode.NONE

    async def died(self, replica):
        await asyncio.Event().wait()

    async def delete(self, tp, replica):
        pass

    async def stop(self, tp, replica):
        replica.log.close()
        return replica._status()


def metadata() -> ClusterMetadata:
    return ClusterMetadata("c", ME, 1, {ME: BrokerInfo(ME, "127.0.0.1", 9092)},
                           {"t": TopicInfo("t", None, {0: PartitionInfo(0, ME, 0, (ME,), (ME,))})})


def parts(tmp_path):
    dirs = (str(tmp_path / "a"), str(tmp_path / "b"))
    for d in dirs:
        Path(d).mkdir()
    config = BrokerConfig.from_mapping({"broker.id": str(ME), "log.dirs": ",".join(dirs)})
    launcher = Launcher(dirs)
    maintenance = LogMaintenance(config, LOG)

    async def topic_config(topic):
        return config.log_config()

    reconciler = ReplicaReconciler(ME, launcher, maintenance, topic_config, LOG)
    published = []

    async def publish():
        published.append(TP in reconciler.replicas)

    mover = ReplicaLogDirs(dirs, reconciler, maintenance, LOG, topic_id=lambda tp: None, known=lambda tp: tp == TP,
                           hosted=lambda tp: tp == TP, publish=publish, prefer=lambda tp, d: None,
                           io_max_bytes_per_s=1 << 62, file_delete_delay_ms=0)
    return dirs, launcher, reconciler, mover, published


def append(replica: Replica, batches) -> None:
    for b in batches:
        replica.log.append(bytearray(b.data), leader_epoch=0, max_batch_bytes=1 << 20)


def test_a_move_copies_swaps_and_restarts_the_replica_in_the_new_dir(tmp_path):
    dirs, launcher, reconciler, mover, published = parts(tmp_path)

    async def scenario():
        await reconciler.apply(metadata())
        first = launcher.running
        source = first.log_dir
        target = next(d for d in dirs if d != source)
        append(first, workload(150))
        end = first.log.log_end_offset
        assert await mover.alter({TP: "/elsewhere", TopicPartition("x", 0): target}) == {
            TP: ErrorCode.LOG_DIR_NOT_FOUND, TopicPartition("x", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        assert await mover.alter({TP: source}) == {TP: ErrorCode.NONE} and not mover.moves   # already there
        assert await mover.alter({TP: target}) == {TP: ErrorCode.NONE}
        move = mover.moves[TP]
        await move.done.wait()
        assert launcher.running is not first and launcher.running.log_dir == target
        assert launcher.running.log.log_end_offset == end
        assert published == [False, True]   # the front end let go of it, then got it back
        for _ in range(100):   # the old log goes after file.delete.delay.ms (0 here)
            if not any(Path(source).iterdir()):
                break
            await asyncio.sleep(0.01)
        assert [p.name for p in Path(source).iterdir() if p.is_dir()] == []
        described = await mover.describe(None)
        assert {d.path: [(r.tp, r.is_future) for r in d.replicas] for d in described} == {
            source: [], target: [(TP, False)]}
        launcher.running.log.close()

    asyncio.run(scenario())


def test_a_copy_left_by_a_stopped_broker_is_resumed_once_its_replica_runs(tmp_path):
    dirs, launcher, reconciler, mover, published = parts(tmp_path)

    async def scenario():
        await reconciler.apply(metadata())
        first = launcher.running
        batches = workload(90)
        append(first, batches[:60])
        target = next(d for d in dirs if d != first.log_dir)
        move_id = moves.new_move_id()
        future = Path(target) / moves.future_dir(TP, move_id).name
        moves.DirCopier(Path(first.log_dir) / str(TP), future).copy_round()   # the last run's copy, cut short
        append(first, batches[60:])
        end = first.log.log_end_offset
        plan = moves.plan_move_recovery({d: [p.name for p in Path(d).iterdir()] for d in dirs})
        assert [p.name for _, p in plan.resume] == [future.name]
        mover.resume(plan)
        await mover.moves[TP].done.wait()
        assert launcher.running.log_dir == target and launcher.running.log.log_end_offset == end
        assert not future.exists()
        launcher.running.log.close()

    asyncio.run(scenario())
