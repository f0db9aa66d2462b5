"""Shared fixtures: each real component starts once per session and is stopped by pid."""
from __future__ import annotations

import os

# Ray must see this before it is imported anywhere, or it binds the machine's address.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import pytest  # noqa: E402


def pytest_collection_modifyitems(items: list) -> None:
    """Tests marked `alone` run first, while nothing shared is up yet (the session's broker
    and Spark start on first use), so their own many processes do not compete with ours."""
    items.sort(key=lambda item: item.get_closest_marker("alone") is None)  # a stable sort


@pytest.fixture(scope="session")
def rafka_cluster(tmp_path_factory):
    """A one-broker rafka cluster (private ZooKeeper, local Ray on 127.0.0.1) for the session."""
    from rafka.cluster import Cluster
    import ray

    cluster = Cluster(tmp_path_factory.mktemp("rafka"), brokers=1, first_port=0)
    cluster.start()
    assert ray.util.get_node_ip_address() == "127.0.0.1"
    yield cluster
    cluster.stop()


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

