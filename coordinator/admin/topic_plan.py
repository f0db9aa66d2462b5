"""CreateTopics' decisions (pure): validate a requested topic and choose its assignment.

Kafka 3.9's `AdminZkClient.validateTopicCreate` and `AdminUtils.assignReplicasToBrokers`:
a legal name that does not exist yet, known and valid configs, at least one partition and
one replica, a replication factor no larger than the live brokers, or an explicit
assignment whose partitions all have the same number of replicas. The assignment is
rack-aware when every live broker has a rack (`broker.rack`). `__consumer_offsets`, which
a broker creates on first use, gets offsets.topic.replication.factor capped at the live
brokers, so a cluster still growing (or a single broker) has a group coordinator.
"""
from __future__ import annotations

import uuid

from rafka.common.config import BrokerConfig
from rafka.common.errors import (ErrorCode, InvalidPartitionsError, InvalidReplicationFactorError, InvalidTopicError,
                                 TopicAlreadyExistsError)
from rafka.common.metadata import ClusterMetadata
from rafka.common.types import INTERNAL_TOPICS, topic_name_problem
from rafka.coordinator.controller import assignment as assign
from rafka.coordinator.messages import TopicResult, TopicSpec

def plan_topic(config: BrokerConfig, spec: TopicSpec, brokers: assign.Brokers, existing: set[str]) -> TopicResult:
    """The result of creating `spec` (a fresh topic id, partitions and replication factor) on
    the live `brokers` (ids, or id -> rack); raises the KafkaError CreateTopics answers when
    the request is refused."""
    problem = topic_name_problem(spec.name)
    if problem:
        raise InvalidTopicError(problem)
    if spec.name in existing:
        raise TopicAlreadyExistsError(f"Topic '{spec.name}' already exists.")
    config.log_config().with_overrides(spec.configs)  # refuses unknown or bad configs
    if spec.assignments:
        partitions = len(spec.assignments)
        rf = len(next(iter(spec.assignments.values())))
    else:
        partitions = spec.num_partitions if spec.num_partitions != -1 else config.num_partitions
        rf = spec.replication_factor if spec.replication_factor != -1 else config.default_replication_factor
        if spec.name in INTERNAL_TOPICS:   # (__consumer_offsets, __transaction_state: capped at the live brokers)
            rf = max(1, min(rf, len(brokers)))
        if partitions < 1:
            raise InvalidPartitionsError("Number of partitions must be larger than 0.")
        if rf < 1:
            raise InvalidReplicationFactorError("Replication factor must be larger than 0.")
        if rf > len(brokers):
            raise InvalidReplicationFactorError(
                f"Replication factor: {rf} larger than available brokers: {len(brokers)}.")
    configs = dict(spec.configs)
    if spec.name in INTERNAL_TOPICS and "min.insync.replicas" in configs:
        # transaction.state.log.min.isr (2) on a cluster too small for it: capped at the replication factor
        configs["min.insync.replicas"] = str(min(int(configs["min.insync.replicas"]), rf))
    return TopicResult(spec.name, ErrorCode.NONE, None, uuid.uuid4(), partitions, rf, configs)


def topic_assignment(spec: TopicSpec, brokers: assign.Brokers, result: TopicResult) -> dict[int, tuple[int, ...]]:
    """The replicas of each partition: the request's own, or Kafka's assignment over `brokers`
    (ids, or id -> rack: rack-aware when every broker has a rack; AdminOperationError,
    UNKNOWN_SERVER_ERROR, when only some have one)."""
    if spec.assignments:
        return {p: tuple(r) for p, r in spec.assignments.items()}
    return assign.assign_replicas(brokers, result.num_partitions, result.replication_factor)


def has_leaders(metadata: ClusterMetadata, topic: str) -> bool:
    """True once `topic` is in the metadata with a leader for every partition."""
    info = metadata.topics.get(topic)
    return info is not None and all(p.leader >= 0 for p in info.partitions.values())
