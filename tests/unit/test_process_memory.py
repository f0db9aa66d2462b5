"""PSS of a broker's processes, as `rafka status` reports it, against this test's own processes."""
from __future__ import annotations

import os
import subprocess
import sys

from rafka.common.process_memory import MIB, broker_memory, pss_bytes


def test_pss_of_a_live_process_and_of_one_that_has_exited():
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        assert 1 * MIB < pss_bytes(os.getpid()) < 4096 * MIB
        assert pss_bytes(child.pid) > 0
    finally:
        child.communicate(b"")
    assert pss_bytes(child.pid) == 0   # reaped: gone from /proc


def test_broker_memory_splits_replicas_from_services():
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        pids = {"coordinator:0": os.getpid(), "replica:0:t-0": child.pid}
        memory = broker_memory(pids, {"replica:0:t-0"})
        assert memory["live_replicas"] == 1
        assert memory["replica_pss_bytes"] > 0 and memory["service_pss_bytes"] > memory["replica_pss_bytes"]
        assert memory["pss_bytes"] == memory["replica_pss_bytes"] + memory["service_pss_bytes"]
    finally:
        child.communicate(b"")
