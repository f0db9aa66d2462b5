"""`AdminService`: the topic admin APIs a broker answers for its front end.

Any broker takes CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs and
AlterConfigs; as in Kafka's ZooKeeper mode, it validates and writes the request into ZooKeeper
(`/brokers/topics/<t>`, `/admin/delete_topics/<t>`, `/config/topics/<t>` plus a change
notification) and the controller acts on what lands there. CreateTopics, DeleteTopics and
CreatePartitions then wait, up to the request's timeout, until this broker's metadata shows
the outcome, so a client that was answered can use the topic (or no longer sees it).

Async; ZooKeeper calls run in a thread. Decisions (validation, assignment) are in `topic_plan`
and `partition_plan`.
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from functools import partial
from typing import Awaitable, Callable

from rafka.common.config import BrokerConfig
from rafka.common.errors import ErrorCode, KafkaError
from rafka.common.metadata import ClusterMetadata
from rafka.common.topic_configs import ConfigEntry, describe_broker, describe_topic
from rafka.common.types import topic_name_problem
from rafka.coordinator.admin.partition_plan import has_partitions_with_leaders, plan_new_partitions
from rafka.coordinator.admin.topic_plan import has_leaders, plan_topic, topic_assignment
from rafka.coordinator.messages import PartitionsSpec, TopicResult, TopicSpec
from rafka.coordinator.zk.zk_data import ProducerIdBlock, TopicAssignment
from rafka.coordinator.zk.zk_errors import ZnodeVersionConflictError
from rafka.coordinator.zk.zk_store import ZkStore

state_change = logging.getLogger("rafka.state_change")

TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4  # DescribeConfigs/AlterConfigs resource types
AUTO_CREATE_WAIT_MS = 5000              # a timeout of 0 (auto-creation) still waits this long for leaders
DELETE_WAIT_MS = 30000                  # a DeleteTopics timeout of 0 waits this long
ASSIGNMENT_WRITE_ATTEMPTS = 5           # CreatePartitions: conditional writes of a topic's znode

AwaitMetadata = Callable[[Callable[[ClusterMetadata], bool], int], Awaitable[bool]]


class AdminService:
    """Topic admin for one broker: validate, write to ZooKeeper, wait for the metadata."""

    def __init__(self, config: BrokerConfig, zk: ZkStore, await_metadata: AwaitMetadata,
                 logger: logging.LoggerAdapter | logging.Logger) -> None:
        self._config = config
        self._zk = zk
        self._await_metadata = await_metadata
        self._log = logger

    async def claim_producer_id_block(self) -> ProducerIdBlock:
        """Claim this broker's next 1,000 producer ids in `/latest_producer_id_block`."""
        return await asyncio.to_thread(self._zk.claim_producer_id_block, self._config.broker_id)

    async def create_topics(self, specs: list[TopicSpec], validate_only: bool, timeout_ms: int) -> list[TopicResult]:
        zk = self._zk
        # Live brokers with their racks: placement is rack-aware when every one has a rack.
        brokers = {b: reg.rack for b, reg in (await asyncio.to_thread(zk.live_brokers)).items()}
        existing = set(await asyncio.to_thread(zk.topic_names))
        results: list[TopicResult] = []
        created: list[str] = []
        for spec in specs:
            try:
                result = plan_topic(self._config, spec, brokers, existing)
                # Assigned even for validate_only, so that it refuses what creation would (Kafka's order).
                replicas = topic_assignment(spec, brokers, result)
                if not validate_only:
                    await asyncio.to_thread(zk.create_topic, TopicAssignment(spec.name, result.topic_id, replicas),
                                            dict(result.configs))
                    created.append(spec.name)
                    existing.add(spec.name)
                    state_change.info("[BrokerCoordinator broker=%d] created topic %s with %d partitions, "
                                      "replication factor %d, assignment %s", self._config.broker_id, spec.name,
                                      result.num_partitions, result.replication_factor, replicas)
                results.append(result)
            except KafkaError as e:
                results.append(TopicResult(spec.name, e.code, str(e)))
        if created:
            await self._await_metadata(lambda m: all(has_leaders(m, t) for t in created),
                                       timeout_ms if timeout_ms > 0 else AUTO_CREATE_WAIT_MS)
        return results

    async def delete_topics(self, names: list[str], timeout_ms: int) -> list[TopicResult]:
        zk = self._zk
        topics = await asyncio.to_thread(zk.topics)
        results, deleting = [], []
        for name in names:
            topic = topics.get(name)
            if topic is None:
                results.append(TopicResult(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                           "This server does not host this topic-partition."))
                continue
            await asyncio.to_thread(zk.delete_topic, name)
            deleting.append(name)
            results.append(TopicResult(name, ErrorCode.NONE, None, topic.topic_id))
        if deleting:
            ok = await self._await_metadata(lambda m: not any(n in m.topics for n in deleting),
                                            timeout_ms or DELETE_WAIT_MS)
            if not ok:
                results = [TopicResult(r.name, ErrorCode.REQUEST_TIMED_OUT, "Deletion is still in progress.",
                                       r.topic_id) if r.name in deleting else r for r in results]
        return results

    async def create_partitions(self, specs: list[PartitionsSpec], validate_only: bool,
                                timeout_ms: int) -> list[TopicResult]:
        """CreatePartitions (KIP-195) as Kafka 3.9's ZooKeeper mode answers it: each topic's new
        partitions are planned (`partition_plan`) and written into `/brokers/topics/<t>` beside
        the existing ones, which the controller sees and acts on; then, up to `timeout_ms`, the
        answer waits until this broker's metadata shows every partition with a leader
        (REQUEST_TIMED_OUT otherwise, and at once for a timeout <= 0: the partitions are still
        added). While no controller is elected nothing is written: NOT_CONTROLLER, which
        clients retry."""
        zk = self._zk
        if await asyncio.to_thread(zk.controller_id) is None:
            return [TopicResult(spec.name, ErrorCode.NOT_CONTROLLER) for spec in specs]
        brokers = {b: reg.rack for b, reg in (await asyncio.to_thread(zk.live_brokers)).items()}
        deleting = set(await asyncio.to_thread(zk.topics_marked_for_deletion))
        results: list[TopicResult] = []
        for spec in specs:
            if spec.name in deleting:
                results.append(TopicResult(spec.name, ErrorCode.INVALID_TOPIC_EXCEPTION,
                                           "The topic is queued for deletion."))
                continue
            try:
                await asyncio.to_thread(self._add_partitions, spec, brokers, validate_only)
                results.append(TopicResult(spec.name, num_partitions=spec.count))
            except KafkaError as e:
                results.append(TopicResult(spec.name, e.code, str(e)))
        grown = [r for r in results if r.error == ErrorCode.NONE]
        if validate_only or not grown:
            return results
        done: set[str] = set()
        if timeout_ms > 0:
            await self._await_metadata(lambda m: all(has_partitions_with_leaders(m, r.name, r.num_partitions)
                                                     for r in grown), timeout_ms)
            for r in grown:   # each topic's own outcome: the metadata as it is now (a wait of 0)
                if await self._await_metadata(partial(has_partitions_with_leaders, topic=r.name,
                                                      count=r.num_partitions), 0):
                    done.add(r.name)
        return [TopicResult(r.name, ErrorCode.REQUEST_TIMED_OUT) if r in grown and r.name not in done else r
                for r in results]

    def _add_partitions(self, spec: PartitionsSpec, brokers: dict[int, str | None], validate_only: bool) -> None:
        """Plan `spec` on the topic's znode and (unless `validate_only`) write it, conditional on
        the version read: a concurrent change (another CreatePartitions) means planning again.
        Blocking (kazoo): runs in a thread."""
        for _ in range(ASSIGNMENT_WRITE_ATTEMPTS):
            read = self._zk.topic_with_version(spec.name) if not topic_name_problem(spec.name) else None
            existing, version = read if read is not None else (None, -1)
            added = plan_new_partitions(spec, existing, brokers)
            if validate_only:
                return
            try:
                self._zk.set_topic_assignment(replace(existing, partitions={**existing.partitions, **added}), version)
            except ZnodeVersionConflictError:
                continue
            state_change.info("[BrokerCoordinator broker=%d] added %d partitions to topic %s: %s",
                              self._config.broker_id, len(added), spec.name, added)
            return
        raise KafkaError(f"The assignment of topic '{spec.name}' kept changing; try again.")

    # -- configs -------------------------------------------------------------------------
    async def topic_overrides(self, topic: str) -> dict[str, str] | None:
        """A topic's config overrides from `/config/topics/<t>`; None for an unknown topic."""
        if not await asyncio.to_thread(self._zk.topic_exists, topic):
            return None
        return await asyncio.to_thread(self._zk.topic_config, topic)

    async def describe_configs(self, resource_type: int, name: str,
                               keys: list[str] | None) -> list[ConfigEntry] | None:
        """DescribeConfigs of a topic (2) or of this broker (4); None when there is no such resource."""
        if resource_type == TOPIC_RESOURCE:
            overrides = await self.topic_overrides(name)
            return None if overrides is None else describe_topic(self._config, overrides, keys)
        if resource_type == BROKER_RESOURCE and name in ("", str(self._config.broker_id)):
            return describe_broker(self._config, keys)
        return None

    async def alter_topic_configs(self, changes: dict[str, dict[str, str]],
                                  validate_only: bool) -> dict[str, tuple[ErrorCode, str | None]]:
        """Replace topics' overrides (validated as CreateTopics does) and notify every broker."""
        zk = self._zk
        out: dict[str, tuple[ErrorCode, str | None]] = {}
        for topic, overrides in changes.items():
            if not await asyncio.to_thread(zk.topic_exists, topic):
                out[topic] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {topic} does not exist")
                continue
            try:
                self._config.log_config().with_overrides(overrides)
            except KafkaError as e:
                out[topic] = (e.code, str(e))
                continue
            if not validate_only:
                await asyncio.to_thread(zk.set_topic_config, topic, overrides)
                self._log.info("updated the config of topic %s: %s", topic, overrides)
            out[topic] = (ErrorCode.NONE, None)
        return out
