"""The replication APIs a front end answers: OffsetForLeaderEpoch, for followers (and for
clients that check their position after a leader change, KIP-320), and ElectLeaders, for
admin clients (`kafka-leader-election.sh`, `rafka leader-election`).

ElectLeaders (KIP-460) goes to the controller through the broker's coordinator; each
partition gets its outcome (ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE,
ELIGIBLE_LEADERS_NOT_AVAILABLE, ...). With no partitions named, every partition is
considered and, as in Kafka, those that needed no election are left out of the answer.

OffsetForLeaderEpoch (KIP-101, KIP-279) tells a follower, or a consumer, where its log
stops agreeing with the leader's: the end offset of the largest leader epoch at or below
the one asked for. The leader replica answers from its `leader-epoch-checkpoint`. A
follower's own fetches come as Fetch requests with its broker id as replica id (see
`handlers.RequestDispatcher._fetch`).
"""
from __future__ import annotations

import asyncio
from typing import Protocol

from rafka.common.errors import ErrorCode
from rafka.net.group_handlers import RequestContext
from rafka.net.protocol import apis
from rafka.net.routing import STARTING_WAIT_MS, LeaderLookup, leader_channel, once_started

OFFSET_FOR_LEADER_EPOCH, ELECT_LEADERS = apis.OFFSET_FOR_LEADER_EPOCH.key, apis.ELECT_LEADERS.key
REPLICATION_APIS = (OFFSET_FOR_LEADER_EPOCH, ELECT_LEADERS)


class ReplicationServices(LeaderLookup, Protocol):
    async def elect_leaders(self, election_type: int, partitions: list[tuple[str, int]] | None
                            ) -> dict[tuple[str, int], ErrorCode] | ErrorCode: ...


class ReplicationApis:
    def __init__(self, services: ReplicationServices) -> None:
        self._services = services

    def handlers(self) -> dict:
        return {OFFSET_FOR_LEADER_EPOCH: self.offset_for_leader_epoch, ELECT_LEADERS: self.elect_leaders}

    async def elect_leaders(self, version: int, body: dict, context: RequestContext) -> dict:
        named = body.get("topic_partitions")
        partitions = None if named is None else [(t["topic"], p) for t in named for p in t["partitions"]]
        outcome = await self._services.elect_leaders(body.get("election_type", 0), partitions)
        if isinstance(outcome, ErrorCode):   # the controller could not be asked
            outcome = {tp: outcome for tp in partitions or ()}
        if partitions is None:
            outcome = {tp: code for tp, code in outcome.items() if code != ErrorCode.ELECTION_NOT_NEEDED}
        by_topic: dict[str, list] = {}
        for (topic, partition), code in sorted(outcome.items()):
            by_topic.setdefault(topic, []).append({"partition_id": partition, "error_code": code,
                                                   "error_message": None if code == ErrorCode.NONE else code.name})
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "replica_election_results": [
            {"topic": topic, "partition_result": results} for topic, results in by_topic.items()]}

    async def offset_for_leader_epoch(self, version: int, body: dict, context: RequestContext) -> dict:
        topics = []
        for topic in body["topics"]:
            entries, calls = [], []
            for p in topic["partitions"]:
                entry = {"error_code": ErrorCode.NONE, "partition": p["partition"], "leader_epoch": -1,
                         "end_offset": -1}
                entries.append(entry)
                err, channel = leader_channel(self._services, topic["topic"], p["partition"])
                if err is ErrorCode.NOT_LEADER_OR_FOLLOWER:
                    err, channel = await once_started(self._services, topic["topic"], p["partition"],
                                                      asyncio.get_running_loop().time() + STARTING_WAIT_MS / 1000)
                if channel is None:
                    entry["error_code"] = err
                else:
                    calls.append((entry, channel.offset_for_leader_epoch(p.get("current_leader_epoch", -1),
                                                                         p["leader_epoch"])))
            answers = await asyncio.gather(*[c for _, c in calls])
            for (entry, _), (error, epoch, end_offset) in zip(calls, answers):
                entry.update(error_code=error, leader_epoch=epoch, end_offset=end_offset)
            topics.append({"topic": topic["topic"], "partitions": entries})
        return {"throttle_time_ms": 0, "topics": topics}
