"""rafka on Ray-on-Spark, end to end, in a loopback-only network namespace of the test's own
(outside one, Ray-on-Spark's worker nodes bind the machine's other address): a DataFrame
ingested by Ray tasks on the Spark workers and read back through the data source, and not
one process of the scenario left behind."""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.waiting import wait_until

JOB = Path(__file__).with_name("ray_on_spark_job.py")
TIMEOUT_S = 480


def processes_in(netns: str) -> list[int]:
    """Pids of the processes living in network namespace `netns` ("net:[inode]")."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.readlink(entry / "ns" / "net") == netns:
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


@pytest.fixture
def work_dir() -> Path:
    """A short directory (Ray's socket paths below it must stay under 107 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="ros-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.alone
def test_rafka_on_ray_on_spark_ingests_through_ray_tasks_and_leaves_nothing_behind(work_dir: Path) -> None:
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        pytest.fail("util-linux's unshare and iproute2's ip are needed for the network namespace")
    token = work_dir / "ray-token"
    token.write_text(secrets.token_hex(32))
    token.chmod(0o600)
    venv_bin = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": f"{venv_bin}:{os.environ['PATH']}", "PYSPARK_PYTHON": sys.executable,
           "SPARK_LOCAL_IP": "127.0.0.1", "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token),
           "RAY_ON_SPARK_RAY_WORKER_NODE_STARTUP_INTERVAL": "2", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
           "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("RAY_ADDRESS", None)
    command = f"ip link set lo up && exec {sys.executable} {JOB} {work_dir}"
    proc = subprocess.Popen(["unshare", "-n", "sh", "-c", command], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the scenario's own process group, by its pid
        stdout, stderr = proc.communicate()
        pytest.fail(f"the Ray-on-Spark scenario did not finish in {TIMEOUT_S} s; {progress(stderr)}")
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    assert proc.returncode == 0 and lines, f"scenario failed ({proc.returncode}); {progress(stderr)}"
    seen = json.loads(lines[-1])
    print("Ray-on-Spark phases (s):", seen["phases_s"])
    assert seen["netns"] != os.readlink("/proc/self/ns/net")
    assert seen["ingested_rows"] == seen["read_rows"] == 20_000
    assert seen["exact"] and seen["partitions_by_murmur2"]
    assert seen["tasks"] == 2 and len(seen["task_nodes"]) == 2 and seen["head_node"] not in seen["task_nodes"]
    assert_nothing_left_in(seen["netns"])


def progress(stderr: str) -> str:
    """The phases the scenario finished (its progress lines), then its stderr's tail."""
    done = "\n".join(line for line in stderr.splitlines() if line.startswith("[ray-on-spark scenario]"))
    return f"phases done:\n{done or '(none)'}\nstderr tail:\n{stderr[-3000:]}"


def assert_nothing_left_in(netns: str) -> None:
    """Every process of the namespace ends (within a deadline); any left are named, then killed."""
    try:
        wait_until(lambda: not processes_in(netns), timeout_s=30, message=f"every process in {netns} gone")
    except AssertionError:
        left = {pid: Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")[:200]
                for pid in processes_in(netns)}
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        raise AssertionError(f"processes left behind in {netns}: {left}") from None
