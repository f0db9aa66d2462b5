"""`BrokerStatus.report`: the processes' memory (PSS from /proc) is read only when asked for,
since a poll of `rafka status` need not pay a read of /proc per process."""
from __future__ import annotations

import asyncio
import os
from types import SimpleNamespace

from rafka.common.metadata import ClusterMetadata
from rafka.coordinator.broker.broker_status import BrokerStatus


def a_status() -> BrokerStatus:
    async def frontend_pid() -> int:
        return os.getpid()

    async def spare_pids() -> list[int]:
        return []
    reconciler = SimpleNamespace(replicas={}, dormant={}, controller_epoch=3, rests=0, wakes=0, offline=lambda: [])
    launcher = SimpleNamespace(spare_pids=spare_pids, spares=0, spares_starting=0)
    return BrokerStatus(broker_id=0, rack=None, node_id=None, reconciler=reconciler, launcher=launcher,
                        frontend=SimpleNamespace(pid=frontend_pid), cap=SimpleNamespace(limit=128, over_cap=0),
                        failed_dirs=SimpleNamespace(reasons={}), metadata=lambda: ClusterMetadata(),
                        is_controller=lambda: True)


def test_the_report_has_this_processes_memory_when_asked():
    report = asyncio.run(a_status().report())
    assert report["pss_bytes"] > 0 and report["service_pss_bytes"] == report["pss_bytes"]
    assert report["pids"]["coordinator:0"] == os.getpid() and report["controller"] is True


def test_a_poll_without_memory_reads_no_pss_but_reports_the_rest():
    report = asyncio.run(a_status().report(memory=False))
    assert "pss_bytes" not in report and "replica_pss_bytes" not in report
    assert report["replicas"] == [] and report["max_live_replica_processes"] == 128
    assert report["pids"]["coordinator:0"] == os.getpid()
