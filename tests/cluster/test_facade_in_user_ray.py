"""`rafka.Cluster` in a Ray the user runs: started by one driver, used and shut down by another.

The user's Ray is `ray start --head --block` on loopback in a temporary directory, with token
authentication as Ray sets it up by itself, stopped at the end by its pid (never by name). The
drivers are processes of their own (`user_ray_drivers`), as two programs of a user would be.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

import pytest

from rafka.common.ports import unused_port
from rafka.common.process_tree import descendants, running, stop_processes
from tests.cluster.user_ray_drivers import RAFKA_ACTOR_CLASSES, RECORDS
from tests.waiting import wait_until

REPO = Path(__file__).resolve().parents[2]
DRIVER_TIMEOUT_S = 600


START_ATTEMPTS = 5   # Ray gives a new node 30 s to register (hard-coded in ray._private.node), too few on a loaded machine


@pytest.fixture
def user_ray() -> Iterator[tuple[str, dict[str, str], int]]:
    """(address, environment for its drivers, pid of `ray start`) of a fresh head node."""
    work = Path(tempfile.mkdtemp(prefix="ur-", dir="/tmp"))   # short: Ray's socket paths live below it
    token = work / "token"
    token.write_text(secrets.token_hex(32))
    token.chmod(0o600)
    # The user runs workers at normal priority, as rafka's docs advise for brokers on a busy
    # machine (Ray's default is nice 15); rafka itself sets nothing in this Ray.
    env = {**os.environ, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0",
           "RAY_worker_niceness": "0",
           "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token),
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    env.pop("RAY_ADDRESS", None)
    head = None
    try:
        for attempt in range(START_ATTEMPTS):
            head, address = start_head(work, env, attempt)
            if head.poll() is None:
                break
        assert head.poll() is None, (work / "ray-start.log").read_text(errors="replace")[-3000:]
        yield address, env, head.pid
    finally:
        if head is not None:
            stop_head(head)
        shutil.rmtree(work, ignore_errors=True)


def start_head(work: Path, env: dict[str, str], attempt: int) -> tuple[subprocess.Popen, str]:
    """`ray start --head --block` on a free loopback port; returns once it serves or has exited."""
    port = unused_port()
    log_path = work / "ray-start.log"
    with open(log_path, "wb") as log:
        head = subprocess.Popen([str(Path(sys.executable).parent / "ray"), "start", "--head", "--block",
                                 "--port", str(port), "--node-ip-address", "127.0.0.1",
                                 "--temp-dir", str(work / f"ray{attempt}"), "--num-cpus", "2",
                                 "--include-dashboard=false", "--disable-usage-stats"],
                                env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    wait_until(lambda: head.poll() is not None or b"Ray runtime started" in log_path.read_bytes(),
               timeout_s=240, interval_s=0.2, message="ray start --head")
    if head.poll() is not None:
        stop_head(head)   # what it started before it gave up
    return head, f"127.0.0.1:{port}"


def stop_head(head: subprocess.Popen) -> None:
    """SIGTERM to `ray start --block` (it stops its node), then whatever of it is left, by pid."""
    processes = descendants(head.pid)
    if head.poll() is None:
        head.send_signal(signal.SIGTERM)
        try:
            head.wait(timeout=60)
        except subprocess.TimeoutExpired:
            head.kill()
            head.wait(timeout=30)
    stop_processes(running(processes), grace_s=10)


def run_driver(action: str, address: str, env: dict[str, str]) -> dict:
    started = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "tests.cluster.user_ray_drivers", action, address], cwd=REPO,
                         env=env, capture_output=True, text=True, timeout=DRIVER_TIMEOUT_S)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    assert out.returncode == 0 and lines, f"driver {action} failed ({out.returncode}):\n{out.stderr[-4000:]}"
    seen = json.loads(lines[-1])
    print(f"driver {action}: {time.monotonic() - started:.1f} s")
    return seen


def rafka_processes_under(root: int) -> dict[int, str]:
    """rafka's actor processes among `root`'s descendants, by Ray's process title (`ray::<Class>...`)."""
    found = {}
    for pid in descendants(root):
        try:
            title = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
        except OSError:
            continue
        if any(title.startswith(f"ray::{name}") for name in RAFKA_ACTOR_CLASSES):
            found[pid] = title
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.slow
@pytest.mark.alone
def test_cluster_started_in_a_users_ray_is_found_by_another_driver_and_leaves_nothing_behind(user_ray) -> None:
    address, env, head_pid = user_ray

    started = run_driver("start", address, env)
    print(f"rafka.Cluster.start(brokers=3) in a user's Ray: {started['start_time_s']:.1f} s")
    assert started["brokers"] == [0, 1, 2]
    assert started["actor_names"] == ["cluster", "coordinator:0", "coordinator:1", "coordinator:2",
                                      "frontend:0", "frontend:1", "frontend:2"]
    assert started["brokers_on_this_node"] and started["partitions"] == [2]
    assert started["environment_unchanged"] and started["namespace_unchanged"] and started["resources_unchanged"]
    # (the user set three of those variables for this Ray themselves; rafka adds none)
    assert set(started["worker_environment_before"]) == {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER",
                                                         "RAY_USAGE_STATS_ENABLED", "RAY_worker_niceness"}
    # The detached cluster outlived the driver that started it: its processes run in the user's Ray.
    assert all(alive(pid) for pid in started["broker_pids"])
    assert alive(started["zookeeper_pid"])
    assert set(started["broker_pids"]) <= set(descendants(head_pid))

    used = run_driver("connect", address, env)
    assert used["bootstrap_servers"] == started["bootstrap_servers"]
    assert used["acked"] == RECORDS and used["received_exact"]
    assert "facade-test" in used["groups"] and used["committed_total"] == RECORDS
    assert used["actor_names_after"] == []
    assert used["connect_after_shutdown"] == "ClusterNotFoundError"
    # The user's Ray is as it was: its actor alive and answering, its resources and workers' environment.
    assert used["keeper_calls"] == 2
    assert used["resources"] == started["resources"]
    assert used["worker_environment_after"] == started["worker_environment_before"] and used["environment_unchanged"]

    wait_until(lambda: not alive(started["zookeeper_pid"]), timeout_s=30, message="ZooKeeper gone")
    wait_until(lambda: not any(alive(pid) for pid in started["broker_pids"]), timeout_s=60,
               message="every broker process gone")
    wait_until(lambda: not rafka_processes_under(head_pid), timeout_s=60, message="no rafka actor process left")
    assert alive(head_pid)
