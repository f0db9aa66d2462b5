"""ZkStore against a real ZooKeeper: Kafka's JSON on the wire, registration, controller
election with epochs, topics, conditional partition-state writes, deletion, watches."""
from __future__ import annotations

import json
from dataclasses import replace
import signal
import subprocess
import sys
import threading
import time
from typing import Callable

import pytest

from rafka.common.errors import StaleControllerEpochError, StartupError, TopicAlreadyExistsError
from rafka.common.types import Endpoint
from rafka.coordinator.zk import zk_data as zd
from rafka.coordinator.zk.zk_data import BrokerRegistration, PartitionState, TopicAssignment
from rafka.common.ports import unused_port
from rafka.coordinator.zk.zk_errors import PartitionStateConflictError, ZnodeVersionConflictError
from rafka.coordinator.zk.zk_store import ZkStore


def wait_until(cond: Callable[[], bool], timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met within %.1f s" % timeout_s)
        time.sleep(0.02)


def reg(broker_id: int, port: int = 9092) -> BrokerRegistration:
    return BrokerRegistration(broker_id, (Endpoint("PLAINTEXT", "127.0.0.1", port),))


@pytest.fixture
def stores(zk_connect):
    opened: list[ZkStore] = []

    def make(session_timeout_ms: int = 6000) -> ZkStore:
        s = ZkStore(zk_connect, session_timeout_ms).start()
        opened.append(s)
        return s

    yield make
    for s in opened:
        s.stop()


def test_unreachable_zookeeper_is_a_clear_startup_error():
    with pytest.raises(StartupError, match="Cannot connect to ZooKeeper at 127.0.0.1:"):
        ZkStore(f"127.0.0.1:{unused_port()}", 6000, connect_timeout_s=1).start()


def test_start_creates_chroot_and_kafkas_persistent_paths(stores, zk_raw):
    stores()
    for path in zd.PERSISTENT_PATHS:
        assert zk_raw.exists(path) is not None, path


def test_cluster_id_is_created_once(stores, zk_raw):
    a, b = stores(), stores()
    cid = a.ensure_cluster_id()
    assert b.ensure_cluster_id() == cid and len(cid) == 22
    raw = json.loads(zk_raw.get("/cluster/id")[0])
    assert raw == {"version": "1", "id": cid}


def test_registration_writes_kafkas_json_in_an_ephemeral_node(stores, zk_raw):
    s = stores()
    s.register_broker(BrokerRegistration(0, (Endpoint("PLAINTEXT", "127.0.0.1", 19092),), rack="r1"))
    data, stat = zk_raw.get("/brokers/ids/0")
    raw = json.loads(data)
    assert set(raw) == {"features", "listener_security_protocol_map", "endpoints", "jmx_port", "port", "host",
                        "version", "timestamp", "rack"}
    assert raw["endpoints"] == ["PLAINTEXT://127.0.0.1:19092"] and raw["version"] == 5 and raw["rack"] == "r1"
    assert stat.ephemeralOwner == s.session_id != 0
    assert s.live_brokers() == {0: BrokerRegistration(0, (Endpoint("PLAINTEXT", "127.0.0.1", 19092),), rack="r1")}
    s.register_broker(reg(0, 19093))  # same session: refreshes
    assert s.live_brokers()[0].endpoints[0].port == 19093


def test_second_registration_of_a_live_id_fails_clearly(stores):
    stores().register_broker(reg(0))
    other = stores()
    with pytest.raises(StartupError, match=r"Broker id 0 is already registered in ZooKeeper at /brokers/ids/0 "
                                           r"by another live broker .*pick another broker.id"):
        other.register_broker(reg(0, 9093))
    other.register_broker(reg(1, 9093))
    assert sorted(other.live_brokers()) == [0, 1]


def test_registration_waits_for_the_old_session_to_end(stores):
    first, second = stores(), stores()
    first.register_broker(reg(0))
    threading.Timer(0.3, first.stop).start()
    second.register_broker(reg(0, 9093), wait_s=10)
    assert second.live_brokers()[0].endpoints[0].port == 9093


def test_restart_after_kill_9_waits_for_the_old_session_to_expire(stores, zk_raw):
    # A broker killed -9 never closes its session: its ephemeral node lingers until expiry.
    s = stores()
    script = (
        "import sys, time\n"
        "from kazoo.client import KazooClient\n"
        "c = KazooClient(hosts=sys.argv[1], timeout=2.0); c.start(timeout=10)\n"
        "c.create('/brokers/ids/5', sys.argv[2].encode(), ephemeral=True)\n"
        "print('ready', flush=True); sys.stdin.read()  # held open until killed\n")
    proc = subprocess.Popen([sys.executable, "-c", script, s.connect, zd.encode_broker(reg(5)).decode()],
                            stdout=subprocess.PIPE, stdin=subprocess.PIPE)
    try:
        assert proc.stdout.readline().strip() == b"ready"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        with pytest.raises(StartupError, match="already registered"):
            s.register_broker(reg(5, 9095))
        started = time.monotonic()
        s.register_broker(reg(5, 9095), wait_s=15)
        assert time.monotonic() - started < 15
        assert json.loads(zk_raw.get("/brokers/ids/5")[0])["port"] == 9095
    finally:
        proc.kill()
        proc.wait()


def test_exactly_one_of_two_wins_the_controller_and_epochs_grow(stores, zk_raw):
    a, b = stores(), stores()
    results = {}
    threads = [threading.Thread(target=lambda s=s, i=i: results.__setitem__(i, s.try_become_controller(i)))
               for i, s in ((1, a), (2, b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [i for i, epoch in results.items() if epoch is not None]
    assert len(winners) == 1
    winner = winners[0]
    assert results[winner] == 1 and zk_raw.get("/controller_epoch")[0] == b"1"
    raw = json.loads(zk_raw.get("/controller")[0])
    assert set(raw) == {"version", "brokerid", "timestamp", "kraftControllerEpoch"}
    assert raw["brokerid"] == winner and raw["version"] == 2 and raw["kraftControllerEpoch"] == -1
    loser_id = 3 - winner
    loser, winner_store = (b, a) if winner == 1 else (a, b)
    assert loser.controller_id() == winner
    seen: list[int | None] = []
    loser.watch_controller(seen.append)
    winner_store.stop()  # session closes: /controller vanishes
    wait_until(lambda: None in seen)
    assert loser.try_become_controller(loser_id) == 2
    assert loser.controller_id() == loser_id and loser.controller_epoch() == 2
    wait_until(lambda: seen[-1] == loser_id)


def test_create_topic_writes_both_znodes_and_refuses_a_duplicate(stores, zk_raw):
    s = stores()
    tid = zd.new_kafka_uuid()
    a = TopicAssignment("orders", tid, {0: (1, 2), 1: (2, 1)})
    s.create_topic(a, {"retention.ms": 60000, "cleanup.policy": "delete"})
    topic = json.loads(zk_raw.get("/brokers/topics/orders")[0])
    assert topic == {"version": 3, "topic_id": zd.uuid_to_kafka(tid), "partitions": {"0": [1, 2], "1": [2, 1]},
                     "adding_replicas": {}, "removing_replicas": {}}
    config = json.loads(zk_raw.get("/config/topics/orders")[0])
    assert config == {"version": 1, "config": {"retention.ms": "60000", "cleanup.policy": "delete"}}
    assert s.topics() == {"orders": a}
    assert s.topic_config("orders") == {"retention.ms": "60000", "cleanup.policy": "delete"}
    with pytest.raises(TopicAlreadyExistsError, match="Topic 'orders' already exists."):
        s.create_topic(TopicAssignment("orders", zd.new_kafka_uuid(), {0: (1,)}), {"retention.ms": 1})
    assert json.loads(zk_raw.get("/config/topics/orders")[0])["config"]["retention.ms"] == "60000"


def test_partition_state_conditional_write_refuses_a_stale_version(stores, zk_raw):
    s = stores()
    first = s.write_partition_state("t", 0, PartitionState(1, 0, (1, 2), 1), expected_version=-1)
    assert first.zk_version == 0
    assert json.loads(zk_raw.get("/brokers/topics/t/partitions/0/state")[0]) == {
        "controller_epoch": 1, "leader": 1, "version": 1, "leader_epoch": 0, "isr": [1, 2]}
    second = s.write_partition_state("t", 0, PartitionState(1, 1, (1,), 1), expected_version=first.zk_version)
    assert second.zk_version == 1 and s.partition_states("t") == {0: second}
    with pytest.raises(PartitionStateConflictError, match="re-read"):
        s.write_partition_state("t", 0, PartitionState(2, 2, (2,), 1), expected_version=first.zk_version)
    with pytest.raises(PartitionStateConflictError):
        s.write_partition_state("t", 0, PartitionState(2, 2, (2,), 1), expected_version=-1)
    assert s.partition_state("t", 0) == second


def test_zombie_controller_write_is_fenced_by_controller_epoch(stores):
    old, new = stores(), stores()
    assert old.try_become_controller(1) == 1
    fence = old.controller_epoch_zk_version
    old.resign_controller()
    assert new.try_become_controller(2) == 2
    with pytest.raises(StaleControllerEpochError):
        old.write_partition_state("t", 0, PartitionState(1, 0, (1,), 1), -1, controller_epoch_zk_version=fence)
    assert new.write_partition_state("t", 0, PartitionState(2, 0, (2,), 2), -1,
                                     controller_epoch_zk_version=new.controller_epoch_zk_version).zk_version == 0


def test_delete_topic_marks_it_and_controller_removes_paths(stores, zk_raw):
    s = stores()
    s.create_topic(TopicAssignment("gone", zd.new_kafka_uuid(), {0: (1,)}), {})
    s.write_partition_state("gone", 0, PartitionState(1, 0, (1,), 1), -1)
    marked: list[list[str]] = []
    s.watch_delete_topics(marked.append)
    s.delete_topic("gone")
    s.delete_topic("gone")  # idempotent
    assert zk_raw.exists("/admin/delete_topics/gone") is not None
    wait_until(lambda: marked and marked[-1] == ["gone"])
    s.remove_topic_paths("gone")
    for path in ("/brokers/topics/gone", "/config/topics/gone", "/admin/delete_topics/gone"):
        assert zk_raw.exists(path) is None, path
    assert s.topics() == {}


def test_watches_report_brokers_and_topics(stores):
    watcher, broker = stores(), stores()
    brokers: list[list[int]] = []
    topics: list[list[str]] = []
    handle = watcher.watch_brokers(brokers.append)
    watcher.watch_topics(topics.append)
    broker.register_broker(reg(4))
    wait_until(lambda: brokers and brokers[-1] == [4])
    broker.create_topic(TopicAssignment("w", zd.new_kafka_uuid(), {0: (4,)}))
    wait_until(lambda: topics and topics[-1] == ["w"])
    broker.stop()
    wait_until(lambda: brokers[-1] == [])
    handle.cancel()


def test_topic_assignment_grows_conditionally_keeping_its_topic_id(stores, zk_raw):
    """CreatePartitions' write: Kafka's JSON with the topic id kept, only at the version read."""
    s = stores()
    topic_id = zd.new_kafka_uuid()
    s.create_topic(TopicAssignment("grow", topic_id, {0: (1, 2)}))
    assignment, version = s.topic_with_version("grow")
    grown = replace(assignment, partitions={0: (1, 2), 1: (2, 1)})
    assert s.set_topic_assignment(grown, version) == version + 1
    raw = json.loads(zk_raw.get("/brokers/topics/grow")[0])
    assert raw["partitions"] == {"0": [1, 2], "1": [2, 1]} and raw["topic_id"] == zd.uuid_to_kafka(topic_id)
    with pytest.raises(ZnodeVersionConflictError):
        s.set_topic_assignment(replace(grown, partitions={0: (1, 2), 1: (2, 1), 2: (1, 2)}), version)
    assert s.topic("grow").partitions == {0: (1, 2), 1: (2, 1)}
    assert s.topic_with_version("missing") is None
    with pytest.raises(ZnodeVersionConflictError):
        s.set_topic_assignment(TopicAssignment("missing", topic_id, {0: (1,)}), 0)


def test_partition_modifications_are_watched_per_topic_and_anew_after_recreation(stores):
    watcher, writer = stores(), stores()
    seen: list[str] = []
    lock = threading.Lock()

    def note(topic: str) -> None:
        with lock:
            seen.append(topic)

    def count(topic: str) -> int:
        with lock:
            return seen.count(topic)

    handle = watcher.watch_partition_modifications(note)
    other: list[str] = []   # a second watch on the same session: it sees what the first would
    watcher.watch_partition_modifications(other.append)
    writer.create_topic(TopicAssignment("pm", zd.new_kafka_uuid(), {0: (1,)}))
    wait_until(lambda: count("pm") == 1)          # first seen
    assignment, version = writer.topic_with_version("pm")
    writer.set_topic_assignment(replace(assignment, partitions={0: (1,), 1: (1,)}), version)
    wait_until(lambda: count("pm") == 2)          # its data changed
    writer.remove_topic_paths("pm")
    writer.create_topic(TopicAssignment("pm", zd.new_kafka_uuid(), {0: (1,)}))
    wait_until(lambda: count("pm") == 3)          # watched again once created again
    assignment, version = writer.topic_with_version("pm")
    writer.set_topic_assignment(replace(assignment, partitions={0: (1,), 1: (1,)}), version)
    wait_until(lambda: count("pm") == 4)
    handle.cancel()
    assignment, version = writer.topic_with_version("pm")
    writer.set_topic_assignment(replace(assignment, partitions={0: (1,), 1: (1,), 2: (1,)}), version)
    writer.create_topic(TopicAssignment("after-cancel", zd.new_kafka_uuid(), {0: (1,)}))
    wait_until(lambda: other.count("pm") == 5 and "after-cancel" in other)
    assert count("pm") == 4 and count("after-cancel") == 0


def test_clear_stale_ephemerals_removes_registrations_of_a_dead_run(stores, zk_raw):
    from kazoo.client import KazooClient
    from rafka.coordinator.zk.zk_session import clear_stale_ephemerals
    s = stores()
    dead = KazooClient(hosts=s.connect, timeout=30.0)  # a long session that would linger
    dead.start(timeout=10)
    dead.create("/brokers/ids/8", zd.encode_broker(reg(8)), ephemeral=True)
    dead.create("/controller", zd.encode_controller(8), ephemeral=True)
    try:
        removed = clear_stale_ephemerals(s.connect)
        assert sorted(p.rsplit("/", 2)[-2:][-1] for p in removed) == ["8", "controller"]
        assert zk_raw.exists("/brokers/ids/8") is None and zk_raw.exists("/controller") is None
        assert zk_raw.exists("/brokers/topics") is not None  # persistent paths untouched
    finally:
        dead.stop()
        dead.close()


def test_write_partition_state_accepts_none_for_create(stores):
    s = stores()
    assert s.write_partition_state("n", 0, PartitionState(1, 0, (1,), 1), None).zk_version == 0


# ---- /latest_producer_id_block ------------------------------------------------------------
def test_first_producer_id_block_starts_at_zero_in_kafkas_json(stores, zk_raw):
    block = stores().claim_producer_id_block(3)
    assert (block.assigned_broker_id, block.first_producer_id, block.last_producer_id) == (3, 0, 999)
    data, _ = zk_raw.get(zd.LATEST_PRODUCER_ID_BLOCK_PATH)
    assert json.loads(data) == {"version": 1, "broker": 3, "block_start": "0", "block_end": "999"}


def test_racing_brokers_never_claim_overlapping_producer_id_blocks(stores):
    brokers = [stores() for _ in range(4)]
    claimed: list[zd.ProducerIdBlock] = []
    lock = threading.Lock()

    def claim(broker_id: int, store: ZkStore) -> None:
        for _ in range(10):
            block = store.claim_producer_id_block(broker_id, size=50)
            with lock:
                claimed.append(block)

    threads = [threading.Thread(target=claim, args=(i, s)) for i, s in enumerate(brokers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    ids = [pid for b in claimed for pid in range(b.first_producer_id, b.last_producer_id + 1)]
    assert len(claimed) == 40 and len(ids) == len(set(ids)) == 2000
    assert sorted(ids) == list(range(2000))


def test_a_deposed_controller_changes_nothing_and_resigns(stores, zk_raw):
    """The Controller's partition-state writes carry the /controller_epoch version it won:
    once another election moved the epoch on, its round is refused whole and it steps down."""
    from rafka.coordinator.controller.controller import Controller

    store = stores()
    store.register_broker(reg(1))
    controller = Controller(1, store)
    store.create_topic(TopicAssignment("before", zd.new_kafka_uuid(), {0: (1,)}), {})
    first = controller.run_round("cluster")
    assert controller.epoch == 1 and first.topics["before"].partitions[0].leader == 1

    zk_raw.set(zd.CONTROLLER_EPOCH_PATH, zd.encode_controller_epoch(2))   # another election meanwhile
    store.create_topic(TopicAssignment("after", zd.new_kafka_uuid(), {0: (1,)}), {})
    assert controller.run_round("cluster") is None
    assert controller.epoch is None and not controller.is_active
    assert zk_raw.exists(zd.CONTROLLER_PATH) is None    # freed for a fresh election
    assert store.partition_states("after") == {}
    assert store.partition_states("before")[0].leader_epoch == 0
    assert controller.run_round("cluster") is not None and controller.epoch == 3   # a new term
    assert store.partition_states("after")[0].leader == 1


def test_the_controller_applies_a_leaders_isr_change_conditionally(stores, zk_raw):
    """AlterPartition through ZooKeeper: the new ISR is written at the version the leader saw,
    noted under /isr_change_notification, and a request at an old version is refused."""
    from rafka.common.errors import ErrorCode
    from rafka.coordinator.controller.controller import Controller
    from rafka.partition_worker.messages import AlterIsr

    store = stores()
    store.register_broker(reg(1))
    for b in (2, 3):                 # one session per broker: registrations are ephemeral
        stores().register_broker(reg(b, 9092 + b))
    controller = Controller(1, store)
    store.create_topic(TopicAssignment("t", zd.new_kafka_uuid(), {0: (1, 2, 3)}), {})
    assert controller.run_round("cluster").topics["t"].partitions[0].isr == (1, 2, 3)
    before = store.partition_state("t", 0)

    written = controller.alter_isr(AlterIsr("t", 0, 1, before.leader_epoch, (1, 2), before.zk_version))
    assert written.isr == (1, 2) and written.zk_version == before.zk_version + 1
    assert written.leader_epoch == before.leader_epoch          # an ISR change is not a new leader epoch
    assert store.partition_state("t", 0) == written
    assert zk_raw.get_children(zd.ISR_CHANGE_NOTIFICATION_PATH)
    stale = controller.alter_isr(AlterIsr("t", 0, 1, before.leader_epoch, (1,), before.zk_version))
    assert stale is ErrorCode.INVALID_UPDATE_VERSION
    assert controller.run_round("cluster").topics["t"].partitions[0].isr == (1, 2)
    assert zk_raw.get_children(zd.ISR_CHANGE_NOTIFICATION_PATH) == []   # consumed by the round
    assert Controller(2, store).alter_isr(AlterIsr("t", 0, 1, 0, (1,), 1)) is ErrorCode.NOT_CONTROLLER


def test_unclean_leader_election_only_where_enabled(stores):
    """The ISR's only member dies: with unclean.leader.election.enable false (Kafka's default)
    the partition goes offline; the topic's override, or the broker's setting, elects a live
    replica outside the ISR instead, marked RECOVERING (KIP-704)."""
    from rafka.coordinator.controller.controller import Controller

    store = stores()
    store.register_broker(reg(1))
    two = stores()
    two.register_broker(reg(2, 9094))
    controller = Controller(1, store)
    for topic, overrides in (("clean", {}), ("unclean", {"unclean.leader.election.enable": "true"})):
        store.create_topic(TopicAssignment(topic, zd.new_kafka_uuid(), {0: (2, 1)}), overrides)
    controller.run_round("cluster")
    for topic in ("clean", "unclean"):   # broker 1 falls out of the ISR: only broker 2 is in sync
        state = store.partition_state(topic, 0)
        store.write_partition_state(topic, 0, replace(state, isr=(2,)), state.zk_version,
                                    controller_epoch_zk_version=store.controller_epoch_zk_version)
    two.stop()                            # the ISR's only member dies
    metadata = controller.run_round("cluster")
    assert metadata.topics["clean"].partitions[0].leader == -1
    assert (metadata.topics["unclean"].partitions[0].leader, metadata.topics["unclean"].partitions[0].isr) == (1, (1,))
    assert store.partition_state("unclean", 0).leader_recovery_state == zd.LEADER_RECOVERY_RECOVERING

    assert Controller(1, store, unclean_leader_election=True)._unclean_allowed("clean")   # the broker's default
    store.set_topic_config("clean", {"unclean.leader.election.enable": "false"})
    assert not Controller(1, store, unclean_leader_election=True)._unclean_allowed("clean")


def test_the_auto_rebalance_moves_leadership_back_to_the_preferred_replica(stores):
    """auto.leader.rebalance.enable: a partition that prefers broker 1 but is led by broker 2
    (after 1 came back) is moved back, fenced and conditional like every controller write."""
    from rafka.coordinator.controller.controller import Controller

    store = stores()
    store.register_broker(reg(1))
    stores().register_broker(reg(2, 9094))
    controller = Controller(1, store)
    store.create_topic(TopicAssignment("t", zd.new_kafka_uuid(), {0: (1, 2), 1: (2, 1)}), {})
    controller.run_round("cluster")
    state = store.partition_state("t", 0)
    store.write_partition_state("t", 0, replace(state, leader=2, leader_epoch=state.leader_epoch + 1),
                                state.zk_version, controller_epoch_zk_version=store.controller_epoch_zk_version)
    assert controller.rebalance_leaders(10) == [("t", 0)]
    assert store.partition_state("t", 0).leader == 1
    assert store.partition_state("t", 0).leader_epoch == state.leader_epoch + 2
    assert controller.rebalance_leaders(10) == []


def test_replicas_a_live_broker_reports_offline_lose_leadership_and_isr_until_they_run_again(stores, zk_raw):
    """Kafka's log dir failure, per replica: broker 2 reports its replica of t-1 (which it
    leads) and of t-0 offline and notes a log dir event in Kafka's JSON; the controller moves
    t-1's leadership to the next live ISR member, takes both out of the ISR, lists them as
    offline, and refuses to let them back into an ISR. A controller elected after the note
    was consumed still reads the report. Once broker 2 reports them running, they are live
    again: the leader's ISR expansion takes them back."""
    from rafka.common.errors import ErrorCode
    from rafka.common.types import TopicPartition
    from rafka.coordinator.controller.controller import Controller
    from rafka.partition_worker.messages import AlterIsr

    store = stores()
    store.register_broker(reg(1))
    two, three = stores(), stores()
    two.register_broker(reg(2, 9094))
    three.register_broker(reg(3, 9095))
    controller = Controller(1, store)
    store.create_topic(TopicAssignment("t", zd.new_kafka_uuid(), {0: (1, 2, 3), 1: (2, 3, 1)}), {})
    controller.run_round("cluster")
    t0, t1 = TopicPartition("t", 0), TopicPartition("t", 1)

    version = two.write_offline_replicas(2, [t0, t1], -1, zd.LOG_DIR_FAILURE_EVENT, 5)
    [note] = zk_raw.get_children(zd.LOG_DIR_EVENT_NOTIFICATION_PATH)
    assert note.startswith("log_dir_event_")
    assert json.loads(zk_raw.get(f"{zd.LOG_DIR_EVENT_NOTIFICATION_PATH}/{note}")[0]) == {
        "version": 1, "broker": 2, "event": 1}
    with pytest.raises(ZnodeVersionConflictError):   # a write at an old version is refused
        two.write_offline_replicas(2, [], -1, zd.REPLICAS_ONLINE_EVENT, 5)
    metadata = controller.run_round("cluster")
    p0, p1 = metadata.topics["t"].partitions[0], metadata.topics["t"].partitions[1]
    assert (p0.leader, p0.isr, p0.offline_replicas) == (1, (1, 3), (2,))
    assert (p1.leader, p1.isr, p1.offline_replicas) == (3, (3, 1), (2,))
    assert zk_raw.get_children(zd.LOG_DIR_EVENT_NOTIFICATION_PATH) == []   # consumed
    state = store.partition_state("t", 0)
    assert controller.alter_isr(AlterIsr("t", 0, 1, state.leader_epoch, (1, 2, 3), state.zk_version)) \
        is ErrorCode.INELIGIBLE_REPLICA

    controller.epoch = None                 # the controller moves: broker 3's reads the report anyway
    store.resign_controller()
    successor = Controller(3, three)
    assert successor.run_round("cluster").topics["t"].partitions[1].offline_replicas == (2,)

    two.write_offline_replicas(2, [], version, zd.REPLICAS_ONLINE_EVENT, 5)
    metadata = successor.run_round("cluster")
    p0, p1 = metadata.topics["t"].partitions[0], metadata.topics["t"].partitions[1]
    assert (p0.leader, p0.isr, p0.offline_replicas) == (1, (1, 3), ())   # back through the leader, not here
    assert (p1.leader, p1.isr, p1.offline_replicas) == (3, (3, 1), ())
    assert two.read_offline_replicas(2, 5) == (frozenset(), version + 1)
    written = successor.alter_isr(AlterIsr("t", 0, 1, state.leader_epoch, (1, 2, 3), state.zk_version))
    assert written.isr == (1, 2, 3)
