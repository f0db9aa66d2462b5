"""`rafka down` stops every process `rafka up` started, whatever state the broker is in: in the
middle of a mass topic creation, or after the `rafka up` process itself died.

Once, Ray's dashboard and runtime-env agents outlived such a stop for minutes (parent pid 1,
~260 MB together): the raylet that started them was SIGKILLed (the `up` process died, and
the kernel killed the raylet with it), and the agents then waited on the dead GCS to report
it. The processes of the session are found by pid and start time only, never by name across
the machine (other Ray clusters run here): the process tree of the `rafka up` process, read
before and while it stops, and any process naming the session's Ray directory.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rafka.common.process_tree import Processes, descendants, naming, running, start_time
from tests.cluster.test_cli import RAFKA, free_port, rafka
from tests.waiting import wait_until

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads Linux's /proc")

TOPICS, PARTITIONS = 40, 3          # the burst: 120 replicas asked for at once
CREATED_BEFORE_DOWN = 20            # partitions to see created before `rafka down`


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def unused_libraries(pid: int) -> list[str]:
    """The native libraries of pyarrow and pydantic mapped into process `pid`: Ray's serializer
    add-ons once imported both in every worker."""
    with open(f"/proc/{pid}/maps") as maps:
        text = maps.read()
    return [lib for lib in ("libarrow", "_pydantic_core") if lib in text]


def session_dir(tree: Processes) -> str:
    """The Ray session directory of the processes of `tree` (from the raylet's command line)."""
    for pid in tree:
        for arg in cmdline(pid).split():
            if arg.startswith("--session_dir="):
                return arg.split("=", 1)[1]
    raise AssertionError("no raylet in the tree of `rafka up`")


def up_detached(tmp_path: Path) -> tuple[str, str, int, Processes, str]:
    """`rafka up --detach` of one broker: (data dir, bootstrap servers, pid of the `up` process,
    it and its processes, Ray's session dir), after checking that Ray's two agents are there and
    its API server and autoscaler monitor are not."""
    data_dir = str(tmp_path / "run")
    config = tmp_path / "server.properties"
    config.write_text("offsets.topic.num.partitions=1\n")
    up = rafka("up", "--detach", "--data-dir", data_dir, "--port", str(free_port()), "--config", str(config))
    assert up.returncode == 0, up.stderr
    pid = json.loads((Path(data_dir) / "rafka.state.json").read_text())["pid"]
    session: Processes = {pid: start_time(pid), **descendants(pid)}
    agents = [p for p in session if cmdline(p).split(" ")[0] in ("ray::DashboardAgent", "ray::RuntimeEnvAgent")]
    assert len(agents) == 2, "Ray's dashboard and runtime-env agents run under `rafka up`"
    unused = [cmdline(p) for p in session
              if any(script in cmdline(p) for script in ("ray/dashboard/dashboard.py", "autoscaler/_private/monitor.py"))]
    assert not unused, f"Ray's API server and autoscaler monitor are not started for a broker: {unused}"
    raylet = next(cmdline(p) for p in session if "--session_dir=" in cmdline(p))
    assert "rafka.actors.ray_hooks.minimal_dashboard_agent" in raylet, "the dashboard agent runs without modules"
    assert "lean_worker.py" in raylet and "default_worker.py" not in raylet, "workers start lean"
    # (an actor's process title names the call it runs, if any: "ray::Frontend.update_metadata")
    actors = [p for p in session
              if cmdline(p).split(" ")[0].split(".")[0] in ("ray::Frontend", "ray::BrokerCoordinator")]
    assert len(actors) == 2
    assert not [(cmdline(p), lib) for p in actors for lib in unused_libraries(p)], \
        "a broker's actors load neither pyarrow nor pydantic (lean_imports)"
    return data_dir, up.stdout.strip(), pid, session, session_dir(session)


def agent_errors(ray_dir: str) -> list[str]:
    """The ERROR lines of the session's dashboard agent log. Its event module, with no API
    server to report to, once logged one every second."""
    log = Path(ray_dir) / "logs" / "dashboard_agent.log"
    return [line for line in log.read_text(errors="replace").splitlines() if re.search(r"\sERROR\s", line)]


def stop_what_is_left(data_dir: str, session: Processes, ray_dir: str) -> None:
    """After a failed test: `rafka down`, then SIGKILL to anything of the session still there."""
    rafka("down", "--data-dir", data_dir)
    for p in running(session) | naming(ray_dir):
        os.kill(p, signal.SIGKILL)


def test_down_after_the_up_process_died_stops_what_it_left(tmp_path):
    """kill -9 of the `rafka up` process (a crash, the OOM killer): the kernel kills Ray's GCS
    and raylet with it, not the raylet's agents and workers; `rafka down` stops those."""
    data_dir, _, pid, session, ray_dir = up_detached(tmp_path)
    try:
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: not running({pid: session[pid]}), timeout_s=10, message="the up process gone")
        down = rafka("down", "--data-dir", data_dir, "--output", "json")
        left = running(session) | naming(ray_dir)
        assert not left, f"left running after `rafka down`: {[cmdline(p)[:80] for p in left]}"
        result = json.loads(down.stdout)
        assert down.returncode == 1 and result["stopped"] and not result["clean"], down.stderr   # not a clean stop
        assert len(result["leftovers"]) >= 2   # the agents at least
    finally:
        stop_what_is_left(data_dir, session, ray_dir)


def test_down_in_the_middle_of_a_mass_creation_leaves_no_process_of_the_session(tmp_path):
    from confluent_kafka.admin import AdminClient, NewTopic

    data_dir, bootstrap, pid, session, ray_dir = up_detached(tmp_path)
    down = None
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        before = len(session)
        admin.create_topics([NewTopic(f"burst-{i}", PARTITIONS, 1) for i in range(TOPICS)], request_timeout=120)
        # Mid-creation: partitions of the burst made on disk, or their replica processes starting.
        wait_until(lambda: len(list(Path(data_dir).glob("*/logs/burst-*"))) >= CREATED_BEFORE_DOWN
                   or len(descendants(pid)) >= before + CREATED_BEFORE_DOWN, timeout_s=120, interval_s=0.2,
                   message=f"{CREATED_BEFORE_DOWN} partitions of the burst being created")
        session.update(descendants(pid))
        assert not agent_errors(ray_dir)
        down = subprocess.Popen([*RAFKA, "down", "--data-dir", data_dir, "--output", "json"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        while down.poll() is None:   # follow the tree as `up` stops: what the raylet leaves, `up` adopts
            session.update(descendants(pid))
            time.sleep(0.2)
        out, err = down.communicate()
        # Nothing of the session runs once `rafka down` returns: it waits for what it stops.
        left = running(session) | naming(ray_dir)
        assert not left, f"left running after `rafka down`: {[cmdline(p)[:80] for p in left]}"
        result = json.loads(out)
        assert down.returncode == 0 and result["clean"] and result["stopped"], err
        # The `up` process stopped it all itself, in order: `rafka down` found nothing left to stop.
        assert result["leftovers"] == [], err
        assert rafka("status", "--data-dir", data_dir).returncode == 1
    finally:
        if down is None or down.returncode != 0:
            stop_what_is_left(data_dir, session, ray_dir)
