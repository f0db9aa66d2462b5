"""The metadata snapshot crosses actor calls pickled as msgpack: every field comes back."""
from __future__ import annotations

import copy
import pickle
import uuid

import ray.cloudpickle as cloudpickle

from rafka.common.metadata import BrokerInfo, ClusterMetadata, PartitionInfo, TopicInfo

SNAPSHOT = ClusterMetadata(
    cluster_id="c-1", controller_id=2, controller_epoch=7,
    brokers={1: BrokerInfo(1, "h1", 9092), 2: BrokerInfo(2, "h2", 9093, rack="r2")},
    topics={
        "orders": TopicInfo("orders", uuid.UUID("1b4e28ba-2fa1-11d2-883f-0016d3cca427"), {
            0: PartitionInfo(0, 1, 3, (1, 2), (1,), offline_replicas=(2,)),
            1: PartitionInfo(1, -1, 0, (2,), ()),
        }),
        "__consumer_offsets": TopicInfo("__consumer_offsets", uuid.UUID(int=5),
                                        {0: PartitionInfo(0, 2, 1, (2,), (2,))}, internal=True),
    })


def test_snapshot_round_trips_through_pickle_and_rays_cloudpickle():
    for dumps in (pickle.dumps, cloudpickle.dumps):
        back = pickle.loads(dumps(SNAPSHOT))
        assert back == SNAPSHOT and back is not SNAPSHOT
        assert isinstance(back.topics["orders"].partitions[0].replicas, tuple)
        assert back.partition("orders", 0).offline_replicas == (2,) and back.brokers[2].rack == "r2"
        assert back.topic_by_id(uuid.UUID(int=5)).internal


def test_snapshot_is_pickled_as_one_msgpack_blob():
    assert b"PartitionInfo" not in pickle.dumps(SNAPSHOT)  # no per-object class references
    assert copy.deepcopy(SNAPSHOT) == SNAPSHOT


def test_empty_snapshot_round_trips():
    assert pickle.loads(pickle.dumps(ClusterMetadata())) == ClusterMetadata()
