"""The broker configs the Kafka listener applies (Kafka's SocketServerConfigs), as one value."""
from __future__ import annotations

import logging
import socket
from dataclasses import dataclass

from rafka.common.config import INT_MAX, BrokerConfig, ip_overrides

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SocketServerSettings:
    max_request_bytes: int = 104_857_600         # socket.request.max.bytes
    queued_max_requests: int = 500               # queued.max.requests (per connection here)
    queued_max_request_bytes: int = 104_857_600  # queued.max.request.bytes (rafka's default; Kafka: -1)
    max_connections: int = INT_MAX               # max.connections
    max_connections_per_ip: int = INT_MAX        # max.connections.per.ip
    max_connections_per_ip_overrides: str = ""   # max.connections.per.ip.overrides
    connections_max_idle_ms: int = 600_000       # connections.max.idle.ms (-1: never)

    @classmethod
    def from_config(cls, config: BrokerConfig) -> "SocketServerSettings":
        return cls(max_request_bytes=config.socket_request_max_bytes,
                   queued_max_requests=config.queued_max_requests,
                   queued_max_request_bytes=config.queued_max_request_bytes,
                   max_connections=config.max_connections,
                   max_connections_per_ip=config.max_connections_per_ip,
                   max_connections_per_ip_overrides=config.max_connections_per_ip_overrides,
                   connections_max_idle_ms=config.connections_max_idle_ms)


def resolve_overrides(text: str) -> dict[str, int]:
    """The per-address limits of `max.connections.per.ip.overrides`, host names resolved to
    their addresses (Kafka resolves them with InetAddress.getByName when it starts; every
    address of a name gets the limit here). Blocking (DNS): run it in a thread. A name that
    does not resolve is skipped with a warning."""
    out: dict[str, int] = {}
    for host, limit in ip_overrides(text).items():
        try:
            infos = socket.getaddrinfo(host.strip("[]"), None, type=socket.SOCK_STREAM)
        except OSError as e:
            log.warning("max.connections.per.ip.overrides: cannot resolve %s (%s); its override is not applied", host, e)
            continue
        for info in infos:
            out[str(info[4][0])] = limit
    return out
