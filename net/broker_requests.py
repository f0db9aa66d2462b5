"""Requests from this broker to another one over the Kafka protocol (the transaction
coordinator's WriteTxnMarkers, a leader's verify-only AddPartitionsToTxn): one connection per
broker, one request at a time on it, reopened after a failure or an address change."""
from __future__ import annotations

import asyncio
from typing import Any

from rafka.common.metadata import ClusterMetadata
from rafka.net.replica_fetcher import LeaderConnection


class BrokerUnreachable(Exception):
    """The broker is not in the metadata, or its request failed or timed out."""


class BrokerRequests:
    """Connections to the other brokers, by id, named `client_id` in their request headers."""

    def __init__(self, client_id: str) -> None:
        self._client_id = client_id
        self._connections: dict[int, tuple[tuple[str, int], LeaderConnection, asyncio.Lock]] = {}

    async def request(self, metadata: ClusterMetadata, broker_id: int, api_key: int, version: int, body: dict,
                      timeout_s: float) -> dict[str, Any]:
        """The broker's answer; raises `BrokerUnreachable`."""
        broker = metadata.brokers.get(broker_id)
        if broker is None:
            raise BrokerUnreachable(f"broker {broker_id} is not in the metadata")
        address = (broker.host, broker.port)
        known = self._connections.get(broker_id)
        if known is None or known[0] != address:
            if known is not None:
                known[1].close()
            known = (address, LeaderConnection(broker.host, broker.port, self._client_id), asyncio.Lock())
            self._connections[broker_id] = known
        _, connection, lock = known
        try:
            async with lock:
                return await connection.request(api_key, version, body, timeout_s)
        except Exception as e:  # noqa: BLE001 - a dead or slow broker: the caller retries
            connection.close()
            raise BrokerUnreachable(f"broker {broker_id}: {e!r}") from e

    def close(self) -> None:
        for _, connection, _ in self._connections.values():
            connection.close()
        self._connections.clear()
