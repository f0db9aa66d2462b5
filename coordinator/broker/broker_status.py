"""What `rafka status` shows of one broker, and the pids a kill of the broker needs.

`partition_health` is pure: Kafka's broker metrics of the same names, from the metadata —
the partitions a broker leads, those it leads with an ISR short of their replicas
(UnderReplicatedPartitions) and, on the controller, those without a leader
(OfflinePartitionsCount). `BrokerStatus` gathers the rest from the broker's parts: its
processes and their memory (PSS from this node's /proc), replicas running, dormant and
offline, spare processes, the live cap, and failed log dirs (OfflineLogDirectoryCount).
"""
from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import Any, Callable

from rafka.actors.naming import coordinator_name, frontend_name, replica_name
from rafka.common.metadata import ClusterMetadata
from rafka.common.process_memory import broker_memory

PIDS_TIMEOUT_S = 10.0


def partition_health(metadata: ClusterMetadata, broker_id: int, controller: bool) -> dict:
    """`leaders` (a count), `under_replicated_partitions` and `offline_partitions` ("topic-p",
    sorted; the latter on the controller only)."""
    partitions = [(name, info) for name, topic in metadata.topics.items() for info in topic.partitions.values()]
    led = [(name, info) for name, info in partitions if info.leader == broker_id]
    return {"leaders": len(led),
            "under_replicated_partitions": sorted(f"{name}-{info.partition}" for name, info in led
                                                  if len(info.isr) < len(info.replicas)),
            "offline_partitions": sorted(f"{name}-{info.partition}" for name, info in partitions
                                         if info.leader < 0) if controller else []}


@dataclass
class BrokerStatus:
    """One broker's report, from its parts (the coordinator's collaborators)."""

    broker_id: int
    rack: str | None
    node_id: str | None
    reconciler: Any        # ReplicaReconciler
    launcher: Any          # RayReplicaLauncher
    frontend: Any          # FrontendClient
    cap: Any               # LiveReplicaCap
    failed_dirs: Any       # FailedLogDirs
    metadata: Callable[[], ClusterMetadata]
    is_controller: Callable[[], bool]
    cluster_id: str = ""
    endpoint: str = "None"

    async def pids(self) -> dict[str, int]:
        """Process ids of the broker's actors (coordinator, front end, replicas, spares), by actor name."""
        me = self.broker_id
        pids = {coordinator_name(me): os.getpid(), frontend_name(me): await self.frontend.pid()}
        for tp, replica in self.reconciler.replicas.items():
            pids[replica_name(me, tp)] = replica.pid
        for i, pid in enumerate(await self.launcher.spare_pids()):
            pids[f"replica-spare:{me}:{i}"] = pid
        return pids

    async def report(self, memory: bool = True) -> dict:
        """Everything `rafka status` shows of this broker; without the processes' memory (PSS,
        ~3-7 ms of a core per process to read) unless `memory`."""
        metadata, me, reconciler = self.metadata(), self.broker_id, self.reconciler
        controller = self.is_controller()
        try:
            pids = await asyncio.wait_for(self.pids(), PIDS_TIMEOUT_S)
            replicas = {replica_name(me, tp) for tp in reconciler.replicas}
            sizes = await asyncio.to_thread(broker_memory, pids, replicas) if memory else {}   # this node's /proc
        except Exception as e:  # noqa: BLE001 - the front end is busy or gone: report without its pid
            pids, sizes = {"error": repr(e)}, {}
        return {**sizes, "broker_id": me, "rack": self.rack, "controller": controller,
                "controller_id": metadata.controller_id, "controller_epoch": reconciler.controller_epoch,
                "cluster_id": self.cluster_id, "endpoint": self.endpoint, "pid": os.getpid(),
                "node_id": self.node_id, "pids": pids, "replicas": sorted(str(tp) for tp in reconciler.replicas),
                "dormant_replicas": len(reconciler.dormant), "spare_replica_processes": self.launcher.spares,
                "spare_replica_processes_starting": self.launcher.spares_starting,
                "max_live_replica_processes": self.cap.limit, "wakes_over_the_cap": self.cap.over_cap,
                "rests": reconciler.rests, "wakes": reconciler.wakes, **partition_health(metadata, me, controller),
                "offline_replicas": [{"partition": str(o.tp), "error": o.error, "failures": o.failures,
                                      "retry_in_ms": round(o.retry_in_ms)} for o in reconciler.offline()],
                "offline_log_dirs": dict(self.failed_dirs.reasons)}
