"""The broker's replica reconciler: targets from metadata, isolated steps, retries with backoff.

The launcher is our own seam (the Ray side); a recording stand-in drives the reconciler
here, so a partition that fails to start is reproduced without a process.
"""
from __future__ import annotations

import asyncio
import logging
import uuid

import pytest

from rafka.common.config import BrokerConfig
from rafka.common.errors import ErrorCode
from rafka.common.metadata import BrokerInfo, ClusterMetadata, PartitionInfo, TopicInfo
from rafka.common.types import TopicPartition
from rafka.coordinator.broker import replica_plan as rp
from rafka.coordinator.broker.log_maintenance import LogMaintenance
from rafka.coordinator.broker.reconciler import ReplicaReconciler
from rafka.partition_worker.replica_state import LeaderAndIsr

ME = 1
TID = uuid.UUID(int=7)


def metadata(controller_epoch: int = 1, **topics: dict[int, tuple[int, ...]]) -> ClusterMetadata:
    """Each topic maps partition -> replicas; the first replica leads at leader epoch 0."""
    infos = {}
    for name, parts in topics.items():
        infos[name] = TopicInfo(name, TID, {p: PartitionInfo(p, r[0], 0, r, r) for p, r in parts.items()})
    return ClusterMetadata("c", ME, controller_epoch, {ME: BrokerInfo(ME, "127.0.0.1", 9092)}, infos)


def order(leader: int, replicas: tuple[int, ...], controller_epoch: int = 1) -> LeaderAndIsr:
    return LeaderAndIsr(leader, 0, replicas, replicas, controller_epoch)


A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


# ---- the pure plan -----------------------------------------------------------------------
def test_targets_are_the_partitions_with_a_replica_on_this_broker():
    meta = metadata(a={0: (1,), 1: (2, 1)}, b={0: (2,)})
    assert rp.replica_targets(meta, ME) == {A0: order(1, (1,)), A1: order(2, (2, 1))}


def test_plan_starts_new_changes_roles_and_stops_the_untargeted():
    targets = {A0: order(1, (1,)), A1: order(1, (1,))}
    book = {A1: rp.started(order(2, (1,))), B0: rp.started(order(1, (1,)))}
    assert rp.plan(targets, book, now_ms=0) == rp.Plan(start=(A0,), become=(A1,), stop=(B0,))


def test_a_failed_replica_is_started_again_only_when_its_retry_is_due():
    entry = rp.failed(None, "corrupt", now_ms=1000)
    assert entry.retry_at_ms == 1000 + rp.RETRY_BACKOFF_MS
    targets = {A0: order(1, (1,))}
    assert rp.plan(targets, {A0: entry}, now_ms=1500) == rp.Plan()
    assert rp.plan(targets, {A0: entry}, now_ms=2000) == rp.Plan(start=(A0,))


def test_backoff_doubles_up_to_its_cap():
    assert [rp.retry_backoff_ms(n) for n in (1, 2, 3, 4)] == [1000, 2000, 4000, 8000]
    assert rp.retry_backoff_ms(50) == rp.RETRY_BACKOFF_MAX_MS
    entry = None
    for _ in range(3):
        entry = rp.failed(entry, "x", now_ms=0)
    assert entry.failures == 3 and entry.retry_at_ms == 4000


def test_offline_replicas_are_listed_in_the_front_ends_metadata():
    meta = metadata(a={0: (1,), 1: (1,)})
    shown = rp.with_offline_replicas(meta, ME, {A1})
    assert shown.partition("a", 1).offline_replicas == (ME,)
    assert shown.partition("a", 0).offline_replicas == ()
    assert meta.partition("a", 1).offline_replicas == ()  # the controller's snapshot is untouched
    assert rp.with_offline_replicas(meta, ME, set()) is meta


def test_a_partition_led_by_an_offline_replica_shows_no_leader_here():
    meta = metadata(a={0: (ME, 2)})
    shown = rp.with_offline_replicas(meta, ME, {A0})
    assert (shown.partition("a", 0).leader, shown.partition("a", 0).offline_replicas) == (-1, (ME,))
    assert rp.with_offline_replicas(meta, 2, {A0}).partition("a", 0).leader == ME


# ---- the reconciler over a stand-in launcher ---------------------------------------------
class RecordingLauncher:
    """Starts 'replicas' as plain records; partitions in `broken` fail to open."""

    def __init__(self, log_dir: str) -> None:
        self.log_dir = log_dir
        self.broken: set[TopicPartition] = set()
        self.hang: set[TopicPartition] = set()
        self.started: list[TopicPartition] = []
        self.orders: list[tuple[TopicPartition, LeaderAndIsr]] = []
        self.deleted: list[TopicPartition] = []
        self.refuse_orders = False

    async def start(self, tp, topic_id, config, place):
        self.started.append(tp)
        if tp in self.hang:
            await asyncio.sleep(3600)
        if tp in self.broken:
            raise RuntimeError(f"The topic id of {tp} does not match (InconsistentTopicIdException)")
        place(tp, self.log_dir)
        return {"tp": tp}

    async def become(self, replica, order_):
        self.orders.append((replica["tp"], order_))
        return ErrorCode.STALE_CONTROLLER_EPOCH if self.refuse_orders else ErrorCode.NONE

    async def delete(self, tp, replica):
        self.deleted.append(tp)

    async def died(self, replica):
        await replica.setdefault("death", asyncio.Event()).wait()
        return True

    async def stop(self, tp, replica):
        self.stopped = getattr(self, "stopped", []) + [tp]
        return None


class Clock:
    def __init__(self) -> None:
        self.ms = 0.0

    def __call__(self) -> float:
        return self.ms


@pytest.fixture
def parts(tmp_path):
    config = BrokerConfig.from_mapping({"broker.id": "1", "log.dirs": str(tmp_path)})
    launcher, clock = RecordingLauncher(str(tmp_path)), Clock()

    async def topic_config(topic):
        return config.log_config()

    reconciler = ReplicaReconciler(ME, launcher, LogMaintenance(config, logging.getLogger("t")), topic_config,
                                   logging.getLogger("t"), step_timeout_s=0.5, clock_ms=clock)
    return reconciler, launcher, clock


def run(coro):
    return asyncio.run(coro)


def test_one_replica_failing_to_start_does_not_hold_up_the_others(parts):
    reconciler, launcher, clock = parts
    launcher.broken = {A1}
    assert run(reconciler.apply(metadata(a={0: (1,), 1: (1,)}, b={0: (1,)}))) == ErrorCode.NONE
    assert set(reconciler.replicas) == {A0, B0}
    assert set(reconciler.leaders()) == {A0, B0}
    [offline] = reconciler.offline()
    assert offline.tp == A1 and "InconsistentTopicId" in offline.error and offline.failures == 1
    assert reconciler.retry_in_s() == pytest.approx(rp.RETRY_BACKOFF_MS / 1000)


def test_a_failed_replica_is_retried_when_due_and_then_serves(parts):
    reconciler, launcher, clock = parts
    launcher.broken = {A0}
    meta = metadata(a={0: (1,)})
    run(reconciler.apply(meta))
    run(reconciler.apply(meta))                    # not due yet: no new attempt
    assert launcher.started.count(A0) == 1
    clock.ms += rp.RETRY_BACKOFF_MS
    run(reconciler.apply(meta))                    # due, fails again: backoff doubles
    assert launcher.started.count(A0) == 2 and reconciler.offline()[0].failures == 2
    assert reconciler.retry_in_s() == pytest.approx(2 * rp.RETRY_BACKOFF_MS / 1000)
    launcher.broken.clear()
    clock.ms += 2 * rp.RETRY_BACKOFF_MS
    run(reconciler.apply(meta))
    assert reconciler.offline() == [] and set(reconciler.leaders()) == {A0}
    assert reconciler.retry_in_s() is None


def test_a_start_that_hangs_times_out_and_is_retried(parts):
    reconciler, launcher, clock = parts
    launcher.hang = {A0}
    run(reconciler.apply(metadata(a={0: (1,), 1: (1,)})))
    assert set(reconciler.replicas) == {A1}
    assert [o.tp for o in reconciler.offline()] == [A0]


def test_role_changes_are_sent_once_and_refusals_resent(parts):
    reconciler, launcher, clock = parts
    run(reconciler.apply(metadata(a={0: (1,)})))
    run(reconciler.apply(metadata(a={0: (1,)})))
    assert len(launcher.orders) == 1               # an unchanged role is not sent again
    launcher.refuse_orders = True
    run(reconciler.apply(metadata(controller_epoch=2, a={0: (1,)})))
    run(reconciler.apply(metadata(controller_epoch=2, a={0: (1,)})))
    assert len(launcher.orders) == 3               # a refused order stays due


def test_metadata_from_an_older_controller_changes_nothing(parts):
    reconciler, launcher, clock = parts
    run(reconciler.apply(metadata(controller_epoch=5, a={0: (1,)})))
    assert run(reconciler.apply(metadata(controller_epoch=4))) == ErrorCode.STALE_CONTROLLER_EPOCH
    assert set(reconciler.replicas) == {A0} and launcher.deleted == []


def test_a_deleted_topics_replicas_are_removed_even_if_they_never_started(parts):
    reconciler, launcher, clock = parts
    launcher.broken = {A1}
    run(reconciler.apply(metadata(a={0: (1,), 1: (1,)})))
    run(reconciler.apply(metadata()))
    assert sorted(launcher.deleted) == [A0, A1]
    assert reconciler.replicas == {} and reconciler.book == {} and reconciler.offline() == []


def test_starts_are_bounded_in_parallel(tmp_path):
    config = BrokerConfig.from_mapping({"broker.id": "1", "log.dirs": str(tmp_path)})
    running = peak = 0

    class SlowLauncher(RecordingLauncher):
        async def start(self, tp, topic_id, config_, place):
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            await asyncio.sleep(0.01)
            running -= 1
            return {"tp": tp}

    async def topic_config(topic):
        return config.log_config()

    reconciler = ReplicaReconciler(ME, SlowLauncher(str(tmp_path)), LogMaintenance(config, logging.getLogger("t")),
                                   topic_config, logging.getLogger("t"), max_parallel_starts=3)
    run(reconciler.apply(metadata(a={p: (1,) for p in range(20)})))
    assert len(reconciler.replicas) == 20 and peak == 3


def test_a_replica_whose_process_dies_is_offline_and_started_again(parts):
    reconciler, launcher, clock = parts
    lost = []

    async def scenario():
        reconciler._on_replica_lost = lambda: asyncio.sleep(0, lost.append(True))
        await reconciler.apply(metadata(a={0: (ME,), 1: (ME,)}))
        await asyncio.sleep(0)
        reconciler.replicas[A1]["death"].set()   # its process dies
        for _ in range(10):
            await asyncio.sleep(0)
        assert A1 not in reconciler.replicas and [o.tp for o in reconciler.offline()] == [A1]
        assert lost == [True] and set(reconciler.leaders()) == {A0}
        clock.ms += rp.retry_backoff_ms(1)
        await reconciler.apply(metadata(a={0: (ME,), 1: (ME,)}))
        assert set(reconciler.leaders()) == {A0, A1} and reconciler.offline() == []
        assert launcher.started.count(A1) == 2
    run(scenario())


def test_a_partition_whose_local_leader_still_starts_keeps_its_leader_in_the_served_metadata():
    meta = metadata(a={0: (ME, 2), 1: (ME,)})
    assert rp.with_offline_replicas(meta, ME, set()) is meta   # starting is not offline: produce waits


def test_each_leader_is_announced_as_it_starts_not_when_the_whole_tick_is_done(tmp_path):
    """A burst's partitions are served one by one: the callback comes per leader, before the tick ends."""
    config = BrokerConfig.from_mapping({"broker.id": "1", "log.dirs": str(tmp_path)})
    ready: list[tuple[TopicPartition, bool]] = []
    gate = asyncio.Event()

    class GatedLauncher(RecordingLauncher):
        async def start(self, tp, topic_id, config_, place):
            if tp == A1:
                await gate.wait()
            return await super().start(tp, topic_id, config_, place)

    async def topic_config(topic):
        return config.log_config()

    async def scenario():
        reconciler = ReplicaReconciler(
            ME, GatedLauncher(str(tmp_path)), LogMaintenance(config, logging.getLogger("t")), topic_config,
            logging.getLogger("t"), on_leader_ready=lambda tp: ready.append((tp, tp in reconciler.leaders())))
        tick = asyncio.ensure_future(reconciler.apply(metadata(a={0: (ME,), 1: (ME,)}, b={0: (2, ME)})))
        for _ in range(50):
            if ready:
                break
            await asyncio.sleep(0)
        assert ready == [(A0, True)] and not tick.done()   # A0 serves while A1 still starts
        gate.set()
        await tick
        assert ready == [(A0, True), (A1, True)]           # B0 is a follower here: no call
    run(scenario())


def test_a_replica_restarted_for_a_log_dir_move_stops_swaps_and_serves_again_with_its_role(parts):
    reconciler, launcher, clock = parts
    steps = []

    async def scenario():
        await reconciler.apply(metadata(a={0: (ME,), 1: (ME,)}))
        old = reconciler.replicas[A0]

        async def before_stop():
            steps.append(("before_stop", A0 in reconciler.replicas))

        async def while_stopped(status):
            steps.append(("while_stopped", A0 in reconciler.replicas, launcher.stopped))

        assert await reconciler.restart_replica(A0, TID, before_stop=before_stop, while_stopped=while_stopped)
        assert reconciler.replicas[A0] is not old
        assert not await reconciler.restart_replica(TopicPartition("c", 0), TID, before_stop=before_stop,
                                                    while_stopped=while_stopped)

    run(scenario())
    assert steps == [("before_stop", False), ("while_stopped", False, [A0])]
    assert launcher.started == [A0, A1, A0]
    assert launcher.orders[-1] == (A0, order(ME, (ME,))) and set(reconciler.leaders()) == {A0, A1}


def test_a_move_whose_swap_fails_leaves_the_replica_offline_and_retried(parts):
    reconciler, launcher, clock = parts

    async def scenario():
        await reconciler.apply(metadata(a={0: (ME,)}))

        async def nothing():
            return None

        async def fail(status):
            raise OSError("No space left on device")

        assert await reconciler.restart_replica(A0, TID, before_stop=nothing, while_stopped=fail)

    run(scenario())
    assert A0 not in reconciler.replicas and "No space left" in reconciler.offline()[0].error
    clock.ms += rp.RETRY_BACKOFF_MS
    run(reconciler.apply(metadata(a={0: (ME,)})))
    assert set(reconciler.leaders()) == {A0}


# ---- dormant replicas (replica.dormant.after.ms) ----------------------------------------
class DormantLauncher(RecordingLauncher):
    """A launcher whose new partitions open dormant (an empty closed log) and whose replicas
    close into one; records role changes taken without a process."""

    def __init__(self, log_dir: str) -> None:
        super().__init__(log_dir)
        self.taken: list[tuple[TopicPartition, LeaderAndIsr]] = []
        self.closed: list[TopicPartition] = []

    def _closed_log(self, end: int = 0):
        from rafka.partition_worker.closed_log import ClosedLog
        return ClosedLog(self.log_dir, (0,), 0, end, end, 0, ())

    async def start(self, tp, topic_id, config, place):
        return Replica(await super().start(tp, topic_id, config, place), pid=1000 + len(self.started))

    async def open_dormant(self, tp, topic_id, role, place):
        place(tp, self.log_dir)
        return self._closed_log()

    async def close(self, replica):
        self.closed.append(replica["tp"])

    def kill(self, replica):
        pass

    def release(self, replica, wanted=False):
        self.released = getattr(self, "released", []) + [replica["tp"]]

    async def reopen_dormant(self, replica, status, place):
        return self._closed_log(end=10)

    async def take_role_dormant(self, closed, role):
        self.taken.append(role)
        return closed


class Replica(dict):
    """A launcher record with the `pid` attribute the reconciler compares."""

    @property
    def pid(self):
        return self["pid"]


@pytest.fixture
def dormant_parts(tmp_path):
    config = BrokerConfig.from_mapping({"broker.id": "1", "log.dirs": str(tmp_path)})
    launcher = DormantLauncher(str(tmp_path))

    async def topic_config(topic):
        return config.log_config()

    ready: list[TopicPartition] = []
    reconciler = ReplicaReconciler(ME, launcher, LogMaintenance(config, logging.getLogger("t")), topic_config,
                                   logging.getLogger("t"), step_timeout_s=5, dormancy=True,
                                   on_leader_ready=ready.append)
    return reconciler, launcher, ready


def test_new_partitions_start_dormant_and_are_served_at_once(dormant_parts):
    reconciler, launcher, ready = dormant_parts
    run(reconciler.apply(metadata(a={0: (ME,), 1: (2, ME)})))
    assert launcher.started == [] and reconciler.replicas == {}
    assert set(reconciler.dormant_leaders()) == {A0} and set(reconciler.dormant_followers()) == {A1}
    assert ready == [A0]


def test_a_wake_starts_the_replica_once_with_its_role(dormant_parts):
    reconciler, launcher, _ = dormant_parts

    async def main():
        await reconciler.apply(metadata(a={0: (ME,)}))
        woke = await asyncio.gather(reconciler.wake(A0, TID), reconciler.wake(A0, TID))
        return woke
    assert run(main()) == [True, True]
    assert launcher.started == [A0] and launcher.orders == [(A0, order(ME, (ME,)))]
    assert A0 in reconciler.replicas and reconciler.dormant == {}


def test_an_idle_replica_rests_only_once_the_front_end_let_go_of_it(dormant_parts):
    reconciler, launcher, _ = dormant_parts

    async def main():
        await reconciler.apply(metadata(a={0: (ME,)}))
        await reconciler.wake(A0, TID)
        replica = reconciler.replicas[A0]
        assert not await reconciler.rest(A0, replica.pid + 1, quiesce=lambda: _value(True))   # another process
        assert not await reconciler.rest(A0, replica.pid, quiesce=lambda: _value(False))      # still busy
        assert A0 in reconciler.replicas and launcher.closed == []
        assert await reconciler.rest(A0, replica.pid, quiesce=lambda: _value(True))
        assert A0 not in reconciler.replicas and reconciler.dormant[A0].log_end_offset == 10
        assert launcher.closed == [A0] and launcher.released == [A0]   # its process kept as a spare
        assert (reconciler.rests, reconciler.wakes) == (1, 1)   # counted for `rafka status`
    run(main())


def test_a_second_rest_of_a_replica_already_resting_is_refused_and_a_wake_meanwhile_completes(tmp_path):
    """Two rests of one replica (its idleness report and a round making room, say) queued behind
    other rests: the second is refused (False), not a KeyError that left a wake waiting on it
    for ever (seen as "could not make replica soak-86-1 dormant: KeyError" in the soak)."""
    config = BrokerConfig.from_mapping({"broker.id": "1", "log.dirs": str(tmp_path)})
    launcher = DormantLauncher(str(tmp_path))

    async def topic_config(topic):
        return config.log_config()
    reconciler = ReplicaReconciler(ME, launcher, LogMaintenance(config, logging.getLogger("t")), topic_config,
                                   logging.getLogger("t"), step_timeout_s=5, dormancy=True, max_parallel_starts=1)

    async def main():
        await reconciler.apply(metadata(a={0: (ME,)}, b={0: (ME,)}))
        await asyncio.gather(reconciler.wake(A0, TID), reconciler.wake(B0, TID))
        let_go = asyncio.Event()

        async def slow_quiesce():
            await let_go.wait()
            return True
        holding = asyncio.ensure_future(reconciler.rest(B0, reconciler.replicas[B0].pid, slow_quiesce))
        await asyncio.sleep(0)                     # b-0's rest holds the only turn
        pid = reconciler.replicas[A0].pid
        first = asyncio.ensure_future(reconciler.rest(A0, pid, lambda: _value(True)))
        second = asyncio.ensure_future(reconciler.rest(A0, pid, lambda: _value(True)))
        await asyncio.sleep(0)
        waking = asyncio.ensure_future(reconciler.wake(A0, TID))   # waits for the rest under way
        await asyncio.sleep(0)
        let_go.set()
        assert sorted(await asyncio.wait_for(asyncio.gather(holding, first, second), 5)) == [False, True, True]
        assert await asyncio.wait_for(waking, 5)   # woken again after the rest, not left waiting
        assert A0 in reconciler.replicas
    run(main())


def test_a_dormant_leader_takes_a_new_epoch_without_a_process_but_a_follower_wakes(dormant_parts):
    reconciler, launcher, _ = dormant_parts
    run(reconciler.apply(metadata(a={0: (ME, 2)}, b={0: (2, ME)})))
    moved = metadata(a={0: (ME, 2)}, b={0: (3, ME)})          # b-0's leader changes
    moved.topics["a"].partitions[0] = PartitionInfo(0, ME, 1, (ME, 2), (ME,))   # a-0: a new epoch, ISR shrunk
    run(reconciler.apply(moved))
    assert [r.leader_epoch for r in launcher.taken] == [1] and A0 in reconciler.dormant
    assert B0 in reconciler.replicas and launcher.started == [B0]


async def _value(v):
    return v


def test_a_publication_of_wakes_and_rests_names_only_the_partitions_that_changed():
    before = ({A0: ("s0", 10)}, {A1: ("s1", 11)}, {B0: "closed-b0"}, {})
    after = ({A0: ("s0", 10), B0: ("s2", 12)}, {A1: ("s1", 11)}, {}, {TopicPartition("c", 0): None})
    assert rp.changed_partitions(before, after) == {B0, TopicPartition("c", 0)}   # woke; born closing
    assert rp.changed_partitions(after, after) == frozenset()
    restarted = ({A0: ("s0", 99), B0: ("s2", 12)}, {A1: ("s1", 11)}, {}, {TopicPartition("c", 0): None})
    assert rp.changed_partitions(after, restarted) == {A0}   # a new process behind the same socket
