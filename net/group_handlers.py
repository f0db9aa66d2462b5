"""Kafka's consumer-group APIs on a front end: FindCoordinator, JoinGroup, SyncGroup,
Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, ListGroups, DescribeGroups, DeleteGroups
and OffsetDelete.

Each handler turns a decoded request into the values of `coordinator.group.group_messages` or calls
on the broker's `GroupCoordinator`, and the answer back into the response's fields. The
broker passes protocol metadata and assignments through untouched, so every client-side
assignor works.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Awaitable, Callable, Protocol

from rafka.common.errors import ErrorCode
from rafka.common.metadata import ClusterMetadata
from rafka.common.types import TopicPartition
from rafka.coordinator.group.group_coordinator import OFFSETS_TOPIC, GroupCoordinator
from rafka.coordinator.transaction.transaction_log import TRANSACTION_STATE_TOPIC
from rafka.coordinator.group.group_messages import (
    CommittedOffset, HeartbeatRequest, JoinRequest, LeaveRequest, SyncRequest,
)
from rafka.net.protocol import apis
from rafka.net.starting_leaders import StartingLeaders

log = logging.getLogger(__name__)

# API keys, from the registry of the protocol tables.
FIND_COORDINATOR, JOIN_GROUP, SYNC_GROUP, HEARTBEAT, LEAVE_GROUP = (
    apis.FIND_COORDINATOR.key, apis.JOIN_GROUP.key, apis.SYNC_GROUP.key, apis.HEARTBEAT.key, apis.LEAVE_GROUP.key)
OFFSET_COMMIT, OFFSET_FETCH, LIST_GROUPS, DESCRIBE_GROUPS, DELETE_GROUPS, OFFSET_DELETE = (
    apis.OFFSET_COMMIT.key, apis.OFFSET_FETCH.key, apis.LIST_GROUPS.key, apis.DESCRIBE_GROUPS.key,
    apis.DELETE_GROUPS.key, apis.OFFSET_DELETE.key)
GROUP_APIS = (FIND_COORDINATOR, JOIN_GROUP, SYNC_GROUP, HEARTBEAT, LEAVE_GROUP, OFFSET_COMMIT, OFFSET_FETCH,
              LIST_GROUPS, DESCRIBE_GROUPS, DELETE_GROUPS, OFFSET_DELETE)
COORDINATOR_TYPE_GROUP = 0
COORDINATOR_TYPE_TRANSACTION = 1
UNKNOWN_AUTHORIZED_OPERATIONS = -2147483648


@dataclass(frozen=True)
class RequestContext:
    """Who sent a request: the header's client id and the peer address."""

    client_id: str
    client_host: str


class GroupServices(Protocol):
    broker_id: int
    metadata: ClusterMetadata
    groups: GroupCoordinator
    starting: StartingLeaders   # local leaders whose replica still starts

    async def ensure_offsets_topic(self) -> None:
        """Create `__consumer_offsets` if it does not exist yet (first use, as Kafka)."""

    async def ensure_txn_topic(self) -> None:
        """Create `__transaction_state` if it does not exist yet (first use, as Kafka)."""


class GroupApis:
    def __init__(self, services: GroupServices) -> None:
        self._services = services

    def handlers(self) -> dict:
        return {FIND_COORDINATOR: self.find_coordinator, JOIN_GROUP: self.join_group, SYNC_GROUP: self.sync_group,
                HEARTBEAT: self.heartbeat, LEAVE_GROUP: self.leave_group, OFFSET_COMMIT: self.offset_commit,
                OFFSET_FETCH: self.offset_fetch, LIST_GROUPS: self.list_groups,
                DESCRIBE_GROUPS: self.describe_groups, DELETE_GROUPS: self.delete_groups,
                OFFSET_DELETE: self.offset_delete}

    # -- FindCoordinator ----------------------------------------------------------------
    async def find_coordinator(self, version: int, body: dict, context: RequestContext) -> dict:
        keys = body.get("coordinator_keys") if version >= 4 else [body["key"]]
        key_type = body.get("key_type", COORDINATOR_TYPE_GROUP)
        found = [await self._coordinator_of(key, key_type) for key in keys or []]
        if version >= 4:
            return {"throttle_time_ms": 0, "coordinators": [
                {"key": key, "node_id": node, "host": host, "port": port, "error_code": code,
                 "error_message": _message(code)} for key, (code, node, host, port) in zip(keys, found)]}
        code, node, host, port = found[0]
        return {"throttle_time_ms": 0, "error_code": code, "error_message": _message(code), "node_id": node,
                "host": host, "port": port}

    async def _coordinator_of(self, key: str, key_type: int) -> tuple[ErrorCode, int, str, int]:
        """(error, node, host, port) of the broker coordinating a group (key type 0) or a
        transactional id (key type 1): the leader of its partition of the internal topic."""
        services = self._services
        if key_type == COORDINATOR_TYPE_TRANSACTION and getattr(services, "txns", None) is not None:
            if not key:
                return ErrorCode.INVALID_REQUEST, -1, "", -1
            return await self._leader_of(TRANSACTION_STATE_TOPIC, services.txns.partition_for(key),
                                         services.ensure_txn_topic, lambda: None)
        if key_type != COORDINATOR_TYPE_GROUP:
            return ErrorCode.INVALID_REQUEST, -1, "", -1
        if not key:
            return ErrorCode.INVALID_REQUEST, -1, "", -1
        return await self._leader_of(OFFSETS_TOPIC, services.groups.partition_for(key), services.ensure_offsets_topic,
                                     lambda: services.groups.warm(key))

    async def _leader_of(self, topic: str, index: int, ensure: Callable[[], Awaitable[None]],
                         warm: Callable[[], object]) -> tuple[ErrorCode, int, str, int]:
        missing = (ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, "", -1)
        services = self._services
        if topic not in services.metadata.topics:
            await ensure()
        info = services.metadata.topics.get(topic)
        if info is None:
            return missing
        partition = info.partitions.get(index)
        broker = services.metadata.brokers.get(partition.leader) if partition is not None else None
        if broker is None:
            return missing
        if broker.broker_id == services.broker_id and TopicPartition(topic, index) in services.starting:
            # Led here, its replica still starting (a restart, a new offsets topic): clients ask
            # again, as they would while the partition had no leader, instead of sending commits
            # that librdkafka does not retry while the group loads.
            return missing
        if broker.broker_id == services.broker_id:
            # Led here, maybe by a resting replica (a new offsets topic's partitions rest until
            # written): it wakes now, so that the group's first writes find it running. (Answering
            # COORDINATOR_NOT_AVAILABLE until it ran made a librdkafka consumer's end-to-end
            # latency 3-5x worse in bench/produce_consume.py, for a cause not yet understood.)
            warm()
        return ErrorCode.NONE, broker.broker_id, broker.host, broker.port

    # -- membership ----------------------------------------------------------------------
    async def join_group(self, version: int, body: dict, context: RequestContext) -> dict:
        rebalance_timeout = body.get("rebalance_timeout_ms", -1)
        request = JoinRequest(
            group_id=body["group_id"], member_id=body["member_id"], group_instance_id=body.get("group_instance_id"),
            session_timeout_ms=body["session_timeout_ms"],
            rebalance_timeout_ms=rebalance_timeout if rebalance_timeout >= 0 else body["session_timeout_ms"],
            protocol_type=body["protocol_type"],
            protocols=tuple((p["name"], bytes(p["metadata"])) for p in body["protocols"]),
            client_id=context.client_id, client_host=context.client_host, api_version=version,
            reason=body.get("reason"))
        r = await self._services.groups.join(request)
        return {"throttle_time_ms": 0, "error_code": r.error, "generation_id": r.generation_id,
                "protocol_type": r.protocol_type, "protocol_name": r.protocol_name if version >= 7 else
                (r.protocol_name or ""), "leader": r.leader, "skip_assignment": r.skip_assignment,
                "member_id": r.member_id,
                "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                             "metadata": m.metadata} for m in r.members]}

    async def sync_group(self, version: int, body: dict, context: RequestContext) -> dict:
        request = SyncRequest(
            group_id=body["group_id"], generation_id=body["generation_id"], member_id=body["member_id"],
            group_instance_id=body.get("group_instance_id"), protocol_type=body.get("protocol_type"),
            protocol_name=body.get("protocol_name"),
            assignments=tuple((a["member_id"], bytes(a["assignment"])) for a in body["assignments"]))
        r = await self._services.groups.sync(request)
        return {"throttle_time_ms": 0, "error_code": r.error, "protocol_type": r.protocol_type,
                "protocol_name": r.protocol_name, "assignment": r.assignment}

    async def heartbeat(self, version: int, body: dict, context: RequestContext) -> dict:
        r = await self._services.groups.heartbeat(HeartbeatRequest(
            group_id=body["group_id"], generation_id=body["generation_id"], member_id=body["member_id"],
            group_instance_id=body.get("group_instance_id")))
        return {"throttle_time_ms": 0, "error_code": r.error}

    async def leave_group(self, version: int, body: dict, context: RequestContext) -> dict:
        if version >= 3:
            members = tuple((m["member_id"], m.get("group_instance_id")) for m in body["members"])
        else:
            members = ((body["member_id"], None),)
        r = await self._services.groups.leave(LeaveRequest(group_id=body["group_id"], members=members))
        error = r.error
        if version < 3 and error is ErrorCode.NONE and r.members:
            error = r.members[0][2]  # v0-2: the one member's error is the answer's
        return {"throttle_time_ms": 0, "error_code": error,
                "members": [{"member_id": m, "group_instance_id": i, "error_code": e} for m, i, e in r.members]}

    # -- offsets ---------------------------------------------------------------------------
    async def offset_commit(self, version: int, body: dict, context: RequestContext) -> dict:
        now_offsets: dict[tuple[str, int], CommittedOffset] = {}
        for topic in body["topics"]:
            for p in topic["partitions"]:
                now_offsets[(topic["name"], p["partition_index"])] = CommittedOffset(
                    offset=p["committed_offset"], leader_epoch=p.get("committed_leader_epoch", -1),
                    metadata=p.get("committed_metadata") or "")
        codes = await self._services.groups.commit_offsets(
            body["group_id"], body.get("member_id", ""), body.get("generation_id_or_member_epoch", -1),
            body.get("group_instance_id"), now_offsets) if now_offsets else {}
        topics: dict[str, list[dict]] = {}
        for (name, partition), code in codes.items():
            topics.setdefault(name, []).append({"partition_index": partition, "error_code": code})
        return {"throttle_time_ms": 0,
                "topics": [{"name": name, "partitions": parts} for name, parts in topics.items()]}

    async def offset_fetch(self, version: int, body: dict, context: RequestContext) -> dict:
        if version >= 8:
            groups = [(g["group_id"], g.get("topics")) for g in body["groups"]]
        else:
            groups = [(body["group_id"], body.get("topics"))]
        stable = body.get("require_stable", False)
        answers = [self._fetch_group(group_id, topics, stable) for group_id, topics in groups]
        if version >= 8:
            return {"throttle_time_ms": 0, "groups": [
                {"group_id": group_id, "error_code": code, "topics": topics}
                for (group_id, _), (code, topics) in zip(groups, answers)]}
        code, topics = answers[0]
        if version < 2 and code is not ErrorCode.NONE:  # v0-1 carry errors per partition only
            for t in topics:
                for p in t["partitions"]:
                    p["error_code"] = code
        return {"throttle_time_ms": 0, "topics": topics, "error_code": code}

    def _fetch_group(self, group_id: str, topics: list[dict] | None,
                     require_stable: bool = False) -> tuple[ErrorCode, list[dict]]:
        """One group's committed offsets. With `require_stable` (v7+, KIP-447), a partition
        whose offset an open transaction holds is UNSTABLE_OFFSET_COMMIT (the client retries)."""
        wanted = None if topics is None else [(t["name"], p) for t in topics for p in t["partition_indexes"]]
        code, found = self._services.groups.fetch_offsets(group_id, wanted)
        if code is not ErrorCode.NONE:
            found = {tp: None for tp in wanted or []}
        pending = self._services.groups.txn_offsets
        by_topic: dict[str, list[dict]] = {}
        for (name, partition), committed in found.items():
            if require_stable and pending.has_pending(group_id, name, partition):
                by_topic.setdefault(name, []).append({
                    "partition_index": partition, "error_code": ErrorCode.UNSTABLE_OFFSET_COMMIT,
                    "committed_offset": -1, "committed_leader_epoch": -1, "metadata": ""})
                continue
            by_topic.setdefault(name, []).append({
                "partition_index": partition, "error_code": ErrorCode.NONE,
                "committed_offset": committed.offset if committed else -1,
                "committed_leader_epoch": committed.leader_epoch if committed else -1,
                "metadata": committed.metadata if committed else ""})
        return code, [{"name": name, "partitions": parts} for name, parts in by_topic.items()]

    async def offset_delete(self, version: int, body: dict, context: RequestContext) -> dict:
        wanted = [(t["name"], p["partition_index"]) for t in body["topics"] for p in t["partitions"]]
        code = await self._services.groups.delete_offsets(body["group_id"], wanted)
        # A group with members keeps its offsets: Kafka answers GROUP_SUBSCRIBED_TO_TOPIC for the
        # topics it consumes; rafka does not read subscriptions yet and says it for every topic.
        partition_code = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC if code is ErrorCode.NON_EMPTY_GROUP else ErrorCode.NONE
        group_code = ErrorCode.NONE if code is ErrorCode.NON_EMPTY_GROUP else code
        topics: dict[str, list[dict]] = {}
        for name, partition in wanted:
            topics.setdefault(name, []).append({"partition_index": partition, "error_code": partition_code})
        return {"throttle_time_ms": 0, "error_code": group_code,
                "topics": [{"name": n, "partitions": ps} for n, ps in topics.items()]}

    # -- administration ------------------------------------------------------------------
    async def list_groups(self, version: int, body: dict, context: RequestContext) -> dict:
        states = {s.lower() for s in body.get("states_filter") or []} or None
        types = {t.lower() for t in body.get("types_filter") or []}
        groups = self._services.groups.state.list_groups(None)
        listed = [{"group_id": g, "protocol_type": p or "", "group_state": s, "group_type": "classic"}
                  for g, p, s in groups
                  if self._services.groups.check(g) is ErrorCode.NONE
                  and (states is None or s.lower() in states) and (not types or "classic" in types)]
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "groups": listed}

    async def describe_groups(self, version: int, body: dict, context: RequestContext) -> dict:
        out = []
        for group_id in body["groups"]:
            code = self._services.groups.check(group_id)
            if code is not ErrorCode.NONE:
                out.append({"error_code": code, "error_message": None, "group_id": group_id, "group_state": "",
                            "protocol_type": "", "protocol_data": "", "members": [],
                            "authorized_operations": UNKNOWN_AUTHORIZED_OPERATIONS})
                continue
            d = self._services.groups.state.describe(group_id)
            out.append({"error_code": d.error, "error_message": None, "group_id": group_id,
                        "group_state": d.state, "protocol_type": d.protocol_type or "",
                        "protocol_data": d.protocol_name or "",
                        "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                                     "client_id": m.client_id, "client_host": m.client_host,
                                     "member_metadata": m.metadata, "member_assignment": m.assignment}
                                    for m in d.members],
                        "authorized_operations": UNKNOWN_AUTHORIZED_OPERATIONS})
        return {"throttle_time_ms": 0, "groups": out}

    async def delete_groups(self, version: int, body: dict, context: RequestContext) -> dict:
        results = await self._services.groups.delete_groups(list(body["groups_names"]))
        return {"throttle_time_ms": 0,
                "results": [{"group_id": g, "error_code": code} for g, code in results.items()]}


def _message(code: ErrorCode) -> str | None:
    return None if code is ErrorCode.NONE else code.name

