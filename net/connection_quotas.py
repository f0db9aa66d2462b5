"""How many connections the front end takes, in all and from each address (Kafka's ConnectionQuotas).

Kafka's rules, for its one listener here: a connection from an address that already has
`max.connections.per.ip` (or its entry in `max.connections.per.ip.overrides`) is closed as
soon as it is accepted; while `max.connections` are open, the listener accepts nothing and new
connections wait in the kernel's backlog until one closes. Pure bookkeeping: the server asks
before accepting and tells when a connection ends.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Mapping


def normalized(address: str) -> str:
    """One spelling per address: `::ffff:127.0.0.1` is 127.0.0.1, IPv6 compressed; names stay."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return str(ip)


@dataclass
class ConnectionQuotas:
    """Open connections by address. `overrides` maps addresses (already resolved from host
    names) to their own limit."""

    max_connections: int
    max_per_ip: int
    overrides: Mapping[str, int] = field(default_factory=dict)
    total: int = 0
    by_ip: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.overrides = {normalized(a): n for a, n in self.overrides.items()}

    def limit_of(self, ip: str) -> int:
        return self.overrides.get(normalized(ip), self.max_per_ip)

    def at_max(self) -> bool:
        """Whether `max.connections` are open: accept nothing until one closes."""
        return self.total >= self.max_connections

    def admit(self, ip: str) -> bool:
        """Count a connection just accepted from `ip`; False (and not counted) when `ip` already
        has its limit, and the connection must be closed at once."""
        ip = normalized(ip)
        count = self.by_ip.get(ip, 0)
        if count >= self.limit_of(ip):
            return False
        self.by_ip[ip] = count + 1
        self.total += 1
        return True

    def closed(self, ip: str) -> None:
        """A connection admitted from `ip` ended."""
        ip = normalized(ip)
        count = self.by_ip.get(ip, 0)
        if count <= 1:
            self.by_ip.pop(ip, None)
        else:
            self.by_ip[ip] = count - 1
        self.total = max(0, self.total - 1)
