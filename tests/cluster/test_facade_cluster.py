"""`rafka.Cluster` and its `admin`: the whole life of a cluster through the facade, in this process's Ray.

The cluster runs in a namespace of its own, so it never meets a session cluster of the same
pytest process (whose Ray it joins when there is one; otherwise it starts a private one, in the
environment rafka gives its own Ray: that a user's Ray and driver keep theirs is
`test_facade_in_user_ray`'s to show).
"""
from __future__ import annotations

import uuid
from pathlib import Path

import pytest

import rafka
from rafka.common.errors import (ClusterNotFoundError, InvalidPartitionsError, StartupError, TopicAlreadyExistsError,
                                 UnknownTopicOrPartitionError)
from tests.waiting import wait_until


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.slow
def test_facade_admin_grows_and_shrinks_and_shutdown_stops_zookeeper(tmp_path: Path) -> None:
    namespace = f"facade-{uuid.uuid4().hex[:8]}"
    with rafka.Cluster.start(brokers=1, namespace=namespace, data_dir=tmp_path,
                             config={"offsets.topic.num.partitions": 1}) as cluster:
        print(f"rafka.Cluster.start(brokers=1): {cluster.start_time_s:.1f} s")
        import ray

        zookeeper_pid = ray.get(ray.get_actor("cluster", namespace=namespace).zookeeper_pid.remote())
        admin = cluster.admin
        admin.create_topic("orders", partitions=2, config={"retention.ms": 1000000})
        with pytest.raises(TopicAlreadyExistsError):
            admin.create_topic("orders")
        with pytest.raises(UnknownTopicOrPartitionError):
            admin.describe_topics(["missing"])
        assert "orders" in admin.list_topics()
        admin.alter_configs("orders", {"retention.ms": 5000, "cleanup.policy": "compact"})
        assert admin.describe_configs("orders") == {"retention.ms": "5000", "cleanup.policy": "compact"}
        admin.alter_configs("orders", {"cleanup.policy": None})
        assert admin.describe_configs("orders") == {"retention.ms": "5000"}
        admin.add_partitions("orders", 3)
        with pytest.raises(InvalidPartitionsError):
            admin.add_partitions("orders", 2)
        [orders] = admin.describe_topics(["orders"])
        assert sorted(orders.partitions) == [0, 1, 2] and all(p.leader == 0 for p in orders.partitions.values())

        with pytest.raises(StartupError, match="already runs"):
            rafka.Cluster.start(namespace=namespace)
        added = cluster.add_broker(rack="r1")
        assert added.broker_id == 1 and added.rack == "r1"
        other = rafka.Cluster.connect(namespace)
        assert sorted(other.brokers) == [0, 1] and other.bootstrap_servers == cluster.bootstrap_servers
        other.stop_broker(1)
        assert sorted(cluster.brokers) == [0]
        admin.delete_topic("orders")
        wait_until(lambda: "orders" not in cluster.admin.list_topics(), timeout_s=30, message="orders deleted")
    with pytest.raises(ClusterNotFoundError):
        rafka.Cluster.connect(namespace, ray_address=None)
    wait_until(lambda: not alive(zookeeper_pid), timeout_s=30, message="ZooKeeper stopped")
