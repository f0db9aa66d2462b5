"""The front end's path to the partition replicas on its own broker.

A plain Ray actor call costs 1.4–2.2 ms round trip and one caller reaches about 1,800
calls/s, so one call per partition per produce request would cap throughput far below
what a client sends. Instead each replica gets a `ReplicaChannel` that keeps at most one
append call in flight: requests that arrive meanwhile queue up and travel together in the
next call (group commit). The busier the partition, the more requests share a call, so
the call rate stays bounded while throughput grows with batch size. Fetches are one call
per partition per request and answer with file regions, never with the bytes.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from rafka.common.errors import ErrorCode
from rafka.partition_worker.messages import FetchResult, OffsetLookup, ProduceResult

# Upper bound on the bytes one coalesced append call carries.
MAX_COALESCED_BYTES = 16 << 20


@dataclass
class _Queued:
    records: Any
    acks: int
    future: asyncio.Future = field(repr=False)


class ReplicaChannel:
    """Appends to one leader replica with at most one call in flight, coalescing the rest."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor
        self._queue: list[_Queued] = []
        self._busy = False

    async def append(self, records: Any, acks: int) -> ProduceResult:
        future = asyncio.get_running_loop().create_future()
        self._queue.append(_Queued(records, acks, future))
        if not self._busy:
            self._busy = True
            asyncio.ensure_future(self._drain())
        return await future

    async def _drain(self) -> None:
        try:
            while self._queue:
                batch, size = [], 0
                acks = self._queue[0].acks
                while self._queue and self._queue[0].acks == acks and (not batch or size < MAX_COALESCED_BYTES):
                    item = self._queue.pop(0)
                    batch.append(item)
                    size += len(item.records)
                payload = [bytes(item.records) for item in batch]
                try:
                    results = await self.actor.append.remote(payload, acks)
                except Exception as e:  # the replica process is gone: fail these, keep serving
                    results = [ProduceResult(ErrorCode.NOT_LEADER_OR_FOLLOWER, error_message=str(e))] * len(batch)
                for item, result in zip(batch, results):
                    if not item.future.done():
                        item.future.set_result(result)
        finally:
            self._busy = False

    async def read(self, fetch_offset: int, max_bytes: int, max_wait_ms: int = 0) -> FetchResult:
        try:
            return await self.actor.read.remote(fetch_offset, max_bytes, max_wait_ms)
        except Exception:
            return FetchResult(ErrorCode.NOT_LEADER_OR_FOLLOWER)

    async def list_offset(self, timestamp: int) -> OffsetLookup:
        try:
            return await self.actor.list_offset.remote(timestamp)
        except Exception:
            return OffsetLookup(ErrorCode.NOT_LEADER_OR_FOLLOWER)
