"""`rafka down` stops every process of the cluster, on a stand-in for `rafka up` (no Ray): a
driver whose "raylet" child starts an "agent" in a session of its own, as Ray's raylet starts
its dashboard and runtime-env agents, and dies before it."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from rafka.cli.main import main
from rafka.cli.state import write_state
from rafka.common.process_tree import descendants, running, start_time
from tests.waiting import wait_until

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads Linux's /proc")

DRIVER = """
import os, signal, subprocess, sys, time
from rafka.common.process_tree import become_subreaper
become_subreaper()
raylet = subprocess.Popen([sys.executable, "-c", "import signal, subprocess; "
                           "subprocess.Popen(['tail', '-f', '/dev/null'], start_new_session=True)\\n"
                           "while True:\\n    signal.pause()"])
def on_sigterm(*_):
    if sys.argv[1] == "hangs":
        return
    raylet.kill()   # the raylet dies first: its agent is adopted here...
    raylet.wait()
    os._exit(0)     # ...and this driver exits without stopping it
signal.signal(signal.SIGTERM, on_sigterm)
while True:
    signal.pause()
"""


@pytest.fixture
def driver(request):
    """A stand-in `rafka up` (in its own session, as `up --detach` starts it) and its agent's pid."""
    proc = subprocess.Popen([sys.executable, "-c", DRIVER, request.param], start_new_session=True)
    tree = wait_until(lambda: len(d := descendants(proc.pid)) == 2 and d, timeout_s=20,
                      message="the driver's raylet and agent")
    agent = max(tree, key=lambda pid: (tree[pid], pid))   # started last
    yield proc, agent
    for pid in running({proc.pid: start_time(proc.pid) or 0, agent: tree[agent]}):
        os.kill(pid, signal.SIGKILL)
    proc.wait()


def down(data_dir, capsys, *extra: str) -> tuple[int, dict]:
    code = main(["down", "--data-dir", str(data_dir), "--output", "json", *extra])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("driver", ["leaves-orphan"], indirect=True)
def test_down_stops_an_agent_its_driver_left_behind(tmp_path, capsys, driver):
    proc, agent = driver
    write_state(tmp_path, {"pid": proc.pid})
    code, result = down(tmp_path, capsys)
    assert code == 0, result
    assert result["clean"] and result["stopped"] and result["leftovers"] == [agent] and result["survivors"] == []
    assert not (tmp_path / "rafka.state.json").exists()
    assert proc.wait(timeout=10) == 0 and running({agent: start_time(agent) or 0}) == {}


@pytest.mark.parametrize("driver", ["hangs"], indirect=True)
def test_down_kills_a_driver_that_does_not_stop_and_everything_it_started(tmp_path, capsys, driver):
    proc, agent = driver
    started = start_time(agent)
    write_state(tmp_path, {"pid": proc.pid})
    code, result = down(tmp_path, capsys, "--timeout", "1")
    assert code == 1 and not result["clean"] and result["stopped"]   # not clean, but nothing left
    assert agent in result["leftovers"]
    assert proc.wait(timeout=10) == -9 and running({agent: started}) == {}


def test_down_stops_what_a_dead_driver_recorded(tmp_path, capsys):
    gone = subprocess.Popen(["true"])
    gone.wait()
    agent = subprocess.Popen(["sleep", "600"], start_new_session=True)
    try:
        write_state(tmp_path, {"pid": gone.pid, "session_processes": {str(agent.pid): start_time(agent.pid)}})
        code, result = down(tmp_path, capsys)
        assert code == 1 and not result["clean"] and result["leftovers"] == [agent.pid]
        assert agent.poll() is not None
    finally:
        agent.kill()
        agent.wait()


def test_down_with_nothing_running_exits_1(tmp_path, capsys):
    code, result = down(tmp_path, capsys)
    assert code == 1 and result["stopped"] is False and "nothing is running" in result["error"]
