"""CreateTopics' validation and assignment, without ZooKeeper."""
from __future__ import annotations

import pytest

from rafka.common.config import BrokerConfig
from rafka.common.errors import (ErrorCode, InvalidConfigError, InvalidPartitionsError,
                                 InvalidReplicationFactorError, InvalidTopicError, TopicAlreadyExistsError)
from rafka.common.metadata import ClusterMetadata, PartitionInfo, TopicInfo
from rafka.coordinator.admin.topic_plan import has_leaders, plan_topic, topic_assignment
from rafka.coordinator.messages import TopicSpec
from rafka.coordinator.zk.zk_data import ZERO_UUID

CONFIG = BrokerConfig.from_mapping({"num.partitions": "3"})


def test_defaults_come_from_the_broker_config():
    result = plan_topic(CONFIG, TopicSpec("orders"), [0], set())
    assert (result.error, result.num_partitions, result.replication_factor) == (ErrorCode.NONE, 3, 1)
    assert result.topic_id.int != 0


@pytest.mark.parametrize("spec, error", [
    (TopicSpec("bad name!"), InvalidTopicError),
    (TopicSpec("t", num_partitions=0), InvalidPartitionsError),
    (TopicSpec("t", replication_factor=0), InvalidReplicationFactorError),
    (TopicSpec("t", replication_factor=2), InvalidReplicationFactorError),
    (TopicSpec("t", configs={"no.such.config": "1"}), InvalidConfigError),
], ids=["name", "partitions", "rf-zero", "rf-above-brokers", "unknown-config"])
def test_refusals(spec, error):
    with pytest.raises(error):
        plan_topic(CONFIG, spec, [0], set())


def test_an_existing_topic_is_refused():
    with pytest.raises(TopicAlreadyExistsError):
        plan_topic(CONFIG, TopicSpec("orders"), [0], {"orders"})


def test_a_replication_factor_up_to_the_live_brokers_is_taken():
    result = plan_topic(CONFIG, TopicSpec("t", replication_factor=3), [0, 1, 2], set())
    assert (result.error, result.replication_factor) == (ErrorCode.NONE, 3)


@pytest.mark.parametrize("brokers, rf", [([0], 1), ([0, 1], 2), ([0, 1, 2, 3], 3)])
def test_the_offsets_topic_replication_factor_is_capped_at_the_live_brokers(brokers, rf):
    result = plan_topic(CONFIG, TopicSpec("__consumer_offsets", 8, 3), brokers, set())
    assert result.replication_factor == rf


def test_another_topic_above_the_live_brokers_is_refused():
    with pytest.raises(InvalidReplicationFactorError, match="larger than available brokers"):
        plan_topic(CONFIG, TopicSpec("t", replication_factor=3), [0, 1], set())


def test_an_explicit_assignment_is_kept():
    spec = TopicSpec("t", assignments={0: (1,), 1: (0,)})
    result = plan_topic(CONFIG, spec, [0, 1], set())
    assert (result.num_partitions, result.replication_factor) == (2, 1)
    assert topic_assignment(spec, [0, 1], result) == {0: (1,), 1: (0,)}


def test_the_assignment_spreads_leaders_over_live_brokers():
    spec = TopicSpec("t", num_partitions=4)
    result = plan_topic(CONFIG, spec, [0, 1], set())
    leaders = [replicas[0] for _, replicas in sorted(topic_assignment(spec, [0, 1], result).items())]
    assert sorted(leaders) == [0, 0, 1, 1]


def test_has_leaders_only_once_every_partition_has_one():
    def meta(*leaders):
        parts = {i: PartitionInfo(i, leader, 0, (0,), (0,)) for i, leader in enumerate(leaders)}
        return ClusterMetadata(topics={"t": TopicInfo("t", ZERO_UUID, parts)})
    assert has_leaders(meta(0, 0), "t")
    assert not has_leaders(meta(0, -1), "t")
    assert not has_leaders(meta(0), "u")


def test_brokers_with_racks_get_a_rack_aware_assignment():
    racks = {0: "a", 1: "b", 2: "b"}
    spec = TopicSpec("t", num_partitions=6, replication_factor=2)
    result = plan_topic(CONFIG, spec, racks, set())
    assignment = topic_assignment(spec, racks, result)
    assert sorted(assignment) == list(range(6))
    assert all({racks[b] for b in replicas} == {"a", "b"} for replicas in assignment.values())


def test_some_brokers_without_a_rack_refuse_the_topic_as_kafka():
    from rafka.coordinator.controller.assignment import AdminOperationError

    spec = TopicSpec("t", num_partitions=1, replication_factor=1)
    brokers = {0: "a", 1: None}
    result = plan_topic(CONFIG, spec, brokers, set())
    with pytest.raises(AdminOperationError, match="Not all brokers have rack information") as e:
        topic_assignment(spec, brokers, result)
    assert e.value.code == ErrorCode.UNKNOWN_SERVER_ERROR
    explicit = TopicSpec("t", assignments={0: (1, 0)})   # a manual assignment never looks at racks
    assert topic_assignment(explicit, brokers, plan_topic(CONFIG, explicit, brokers, set())) == {0: (1, 0)}


def test_the_replication_factor_is_checked_against_brokers_with_racks_too():
    with pytest.raises(InvalidReplicationFactorError, match="larger than available brokers: 2"):
        plan_topic(CONFIG, TopicSpec("t", replication_factor=3), {0: "a", 1: "b"}, set())


@pytest.mark.parametrize("brokers, rf, min_isr", [([0], 1, "1"), ([0, 1], 2, "2"), ([0, 1, 2, 3], 3, "2")],
                         ids=["one-broker", "two-brokers", "four-brokers"])
def test_the_transaction_state_topic_caps_its_replication_factor_and_min_isr(brokers, rf, min_isr):
    from rafka.coordinator.transaction.transaction_coordinator import TxnSettings

    settings = TxnSettings()
    spec = TopicSpec("__transaction_state", settings.partitions, settings.replication_factor,
                     configs=settings.topic_configs())
    result = plan_topic(CONFIG, spec, brokers, set())
    assert (result.num_partitions, result.replication_factor) == (50, rf)
    assert result.configs["min.insync.replicas"] == min_isr
    assert result.configs["cleanup.policy"] == "compact"
