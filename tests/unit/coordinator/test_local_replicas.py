"""`replica_plan.local_replicas`: a broker's replicas by role, in one pass over its book."""
from __future__ import annotations

from rafka.common.types import TopicPartition
from rafka.coordinator.broker import replica_plan as rp
from rafka.partition_worker.replica_state import LeaderAndIsr

ME, OTHER = 1, 2


def entry(phase: rp.Phase, leader: int | None, **kw) -> rp.ReplicaEntry:
    role = None if leader is None else LeaderAndIsr(leader, 0, (ME, OTHER), (ME, OTHER), 1)
    return rp.ReplicaEntry(phase, role, **kw)


def tp(n: int) -> TopicPartition:
    return TopicPartition("t", n)


def test_each_replica_lands_in_the_table_of_its_role_and_state():
    book = {
        tp(0): entry(rp.Phase.RUNNING, ME),       # running leader
        tp(1): entry(rp.Phase.RUNNING, OTHER),    # running follower
        tp(2): entry(rp.Phase.DORMANT, ME),       # dormant leader
        tp(3): entry(rp.Phase.DORMANT, OTHER),    # dormant follower
        tp(4): entry(rp.Phase.RUNNING, ME),       # leader closing to rest: running and dormant (None)
        tp(5): entry(rp.Phase.RUNNING, -1),       # no leader: neither role
        tp(6): entry(rp.Phase.RUNNING, None),     # no order yet: neither role
        tp(8): entry(rp.Phase.FAILED, ME, failures=2, error="disk", retry_at_ms=1500.0),
        tp(7): entry(rp.Phase.FAILED, None, failures=1, error="boom", retry_at_ms=500.0),
    }
    running = {tp(0): "a0", tp(1): "a1", tp(4): "a4", tp(5): "a5"}
    dormant = {tp(2): "closed2", tp(3): "closed3"}
    local = rp.local_replicas(book, running, dormant, {tp(4)}, ME)

    assert local.leaders == {tp(0): "a0", tp(4): "a4"}
    assert local.followers == {tp(1): "a1"}
    assert local.dormant_leaders == {tp(2): "closed2", tp(4): None}
    assert local.dormant_followers == {tp(3): "closed3"}
    assert local.offline == {tp(7), tp(8)}
    assert rp.offline(book, now_ms=1000.0) == [rp.OfflineReplica(tp(7), "boom", 1, 0.0),
                                                rp.OfflineReplica(tp(8), "disk", 2, 500.0)]


def test_dormant_wins_over_closing_once_the_rest_is_done():
    book = {tp(0): entry(rp.Phase.DORMANT, ME)}
    local = rp.local_replicas(book, {}, {tp(0): "closed"}, {tp(0)}, ME)
    assert local.dormant_leaders == {tp(0): "closed"} and local.leaders == {}


def test_a_tracked_dict_counts_every_kind_of_change():
    from rafka.coordinator.broker.tracked import ChangeCount, TrackedDict

    count = ChangeCount()
    a, b = TrackedDict(count), TrackedDict(count)
    steps = [lambda: a.__setitem__(1, "x"), lambda: b.setdefault(2, "y"), lambda: a.update({3: "z"}),
             lambda: a.pop(1), lambda: b.__delitem__(2), lambda: a.popitem(), lambda: b.clear()]
    for n, step in enumerate(steps, 1):
        step()
        assert count.value == n
    assert a == {} and b == {}
    before = count.value
    assert a.get(1) is None and 1 not in b and list(a.items()) == []   # reads change nothing
    assert count.value == before
