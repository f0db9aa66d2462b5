"""Shared fixtures: each real component starts once per session and is stopped by pid.

The session's broker comes in two shapes: every test on it runs on one broker, and a test
marked `replicated` (on the function, its module, or one `pytest.param` of its parameters)
runs again on three brokers whose topics all have replication factor 3. Tests are grouped
by shape and the three-broker ones run last, so the one-broker cluster is stopped before
the three-broker one starts: never two at once in one pytest process. `make test` runs two
(pytest-xdist workers, after the tests marked `alone` have run by themselves), so at most two
session clusters run at once on this 2-core machine.
"""
from __future__ import annotations

import os

# Ray must see this before it is imported anywhere, or it binds the machine's address.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import pytest  # noqa: E402

# The session cluster's shapes: broker count -> test id.
ONE_BROKER, THREE_BROKERS = 1, 3
SHAPE_IDS = {ONE_BROKER: "1-broker", THREE_BROKERS: "3-brokers-rf3"}
REPLICATED_CONFIG = {
    # Every topic a test or a client makes (auto-created ones too) is RF=3 and acks=all needs 2.
    "default.replication.factor": "3", "min.insync.replicas": "2",
    "offsets.topic.replication.factor": "3",
    # 3 partitions (9 replica processes) rather than 8 (24): groups still land on every broker.
    "offsets.topic.num.partitions": "3",
}
# Every session broker: connections from 127.0.0.2 are limited to 3 (tests/interop/test_connection_limits.py);
# clients connect from 127.0.0.1, which keeps Kafka's default (no limit).
# A new group's first rebalance starts at once (group.initial.rebalance.delay.ms=0, as Kafka's
# own config/server.properties ships it "for development and testing"): a group test pays no
# 3 s wait at each start of its group. The delay itself is tested by the unit tests of the
# group coordinator.
# __transaction_state gets 4 partitions rather than Kafka's 50: transactional ids still land on
# several partitions (and on every broker of three), for a fraction of the partitions to create.
# Timed-out transactions are looked for every 500 ms rather than 10 s, so a test of their abort
# takes a second or two.
SESSION_CONFIG = {"max.connections.per.ip.overrides": "127.0.0.2:3", "group.initial.rebalance.delay.ms": "0",
                  "transaction.state.log.num.partitions": "4",
                  "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500"}
_live_clusters: list = []   # the session clusters this pytest process runs now (at most one)


def _replicated(node) -> bool:  # noqa: ANN001 - a pytest Function or FunctionDefinition
    return node.get_closest_marker("replicated") is not None


def _marked_in_parameters(definition) -> bool:  # noqa: ANN001 - pytest's FunctionDefinition
    """Whether one of the test's `pytest.param`s carries the `replicated` mark."""
    return any(getattr(value, "marks", None) and any(m.name == "replicated" for m in value.marks)
               for mark in definition.iter_markers("parametrize")
               for value in (mark.args[1] if len(mark.args) > 1 else mark.kwargs.get("argvalues", ())))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Every test on the session's cluster is parametrized by its shape (one broker; three as
    well when marked `replicated`), so all of them share one cache key per shape and pytest
    keeps each cluster up for as long as its tests run."""
    if "rafka_cluster" not in metafunc.fixturenames:
        return
    shapes = [ONE_BROKER]
    if _replicated(metafunc.definition) or _marked_in_parameters(metafunc.definition):
        shapes.append(THREE_BROKERS)
    metafunc.parametrize("rafka_cluster", shapes, ids=[SHAPE_IDS[s] for s in shapes], indirect=True,
                         scope="session")


def _shape(item) -> int:  # noqa: ANN001 - a pytest Item
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("rafka_cluster", ONE_BROKER) if callspec is not None else ONE_BROKER


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list) -> None:
    """Order, after pytest has grouped tests by fixture: tests marked `alone` first, while
    nothing shared is up yet (the session's broker and Spark start on first use), so their own
    many processes do not compete with ours; the three-broker tests last, so the one-broker
    cluster is torn down once, before they start. A three-broker instance of a parametrized test
    whose own parameters do not carry the mark is dropped: only the marked ones were asked for."""
    items[:] = [i for i in items if _shape(i) == ONE_BROKER or _replicated(i)]
    items.sort(key=lambda item: (item.get_closest_marker("alone") is None, _shape(item)))  # a stable sort


@pytest.fixture(scope="session")
def rafka_cluster(request, tmp_path_factory):
    """The session's rafka cluster (private ZooKeeper, local Ray on 127.0.0.1): one broker, or
    (param 3) three brokers where every topic is RF=3 with min.insync.replicas=2."""
    from rafka.cluster import Cluster
    from rafka.common.config import BrokerConfig
    import ray

    brokers = getattr(request, "param", ONE_BROKER)
    assert not _live_clusters, "a session cluster starts while another one still runs"
    config = BrokerConfig.from_mapping({**SESSION_CONFIG, **(REPLICATED_CONFIG if brokers > 1 else {})})
    cluster = Cluster(tmp_path_factory.mktemp(f"rafka-{brokers}"), brokers=brokers, first_port=0, config=config)
    cluster.start()
    _live_clusters.append(cluster)
    try:
        assert ray.util.get_node_ip_address() == "127.0.0.1"
        yield cluster
    finally:
        cluster.stop()
        _live_clusters.remove(cluster)


@pytest.fixture(scope="session")
def bootstrap(rafka_cluster) -> str:
    return rafka_cluster.bootstrap_servers


@pytest.fixture(autouse=True)
def topics_deleted_after_each_test(request):
    """Every topic a test on the session's broker made (its fixtures' topics of a wider
    scope exist before it starts, so they stay) is deleted when the test ends."""
    if "rafka_cluster" not in request.fixturenames:
        yield
        return
    from tests.topics import delete_topics, user_topics

    bootstrap = request.getfixturevalue("rafka_cluster").bootstrap_servers
    before = user_topics(bootstrap)
    yield
    delete_topics(bootstrap, user_topics(bootstrap) - before)
