"""The replication APIs a leader's front end answers for followers (and for clients that
check their position after a leader change, KIP-320): OffsetForLeaderEpoch.

OffsetForLeaderEpoch (KIP-101, KIP-279) tells a follower, or a consumer, where its log
stops agreeing with the leader's: the end offset of the largest leader epoch at or below
the one asked for. The leader replica answers from its `leader-epoch-checkpoint`. A
follower's own fetches come as Fetch requests with its broker id as replica id (see
`handlers.RequestDispatcher._fetch`).
"""
from __future__ import annotations

import asyncio

from rafka.common.errors import ErrorCode
from rafka.net.group_handlers import RequestContext
from rafka.net.protocol import apis
from rafka.net.routing import LeaderLookup, leader_channel

OFFSET_FOR_LEADER_EPOCH = apis.OFFSET_FOR_LEADER_EPOCH.key
REPLICATION_APIS = (OFFSET_FOR_LEADER_EPOCH,)


class ReplicationApis:
    def __init__(self, services: LeaderLookup) -> None:
        self._services = services

    def handlers(self) -> dict:
        return {OFFSET_FOR_LEADER_EPOCH: self.offset_for_leader_epoch}

    async def offset_for_leader_epoch(self, version: int, body: dict, context: RequestContext) -> dict:
        topics = []
        for topic in body["topics"]:
            entries, calls = [], []
            for p in topic["partitions"]:
                entry = {"error_code": ErrorCode.NONE, "partition": p["partition"], "leader_epoch": -1,
                         "end_offset": -1}
                entries.append(entry)
                err, channel = leader_channel(self._services, topic["topic"], p["partition"])
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
