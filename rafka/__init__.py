"""rafka: a broker that speaks the Apache Kafka protocol, on Ray.

    import rafka
    with rafka.Cluster.start(brokers=3) as cluster:   # in the Ray this driver is connected to
        print(cluster.bootstrap_servers)

`rafka.Cluster` (`rafka.facade.cluster`) and `rafka.Admin` (`rafka.facade.admin`) are loaded on
first use: importing rafka imports no Ray and changes nothing in the process.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rafka.facade.admin import Admin
    from rafka.facade.cluster import Cluster

__all__ = ["Admin", "Cluster"]
_LAZY = {"Cluster": "rafka.facade.cluster", "Admin": "rafka.facade.admin"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'rafka' has no attribute {name!r}")
