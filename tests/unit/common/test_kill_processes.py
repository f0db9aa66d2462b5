"""`kill_processes` on this node: success only once each pid is gone, failure only when one is
not. Real processes (children of the test), Ray's lookups replaced."""
from __future__ import annotations

import subprocess
import sys
from typing import Iterator

import pytest

from rafka.actors import supervisor
from rafka.actors.supervisor import ProcessesSurvivedError, kill_processes
from rafka.common.process_tree import running, start_time

NODE = "node-1"


@pytest.fixture
def on_this_node(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(supervisor, "current_node_id", lambda: NODE)
    monkeypatch.setattr(supervisor, "find_actor", lambda name, namespace: None)  # names released


@pytest.fixture
def sleepers() -> Iterator[list[subprocess.Popen]]:
    procs = [subprocess.Popen([sys.executable, "-c", "import signal\nwhile True:\n    signal.pause()"])
             for _ in range(3)]   # (each runs until a signal ends it)
    yield procs
    for p in procs:
        p.kill()
        p.wait()


def test_returns_once_every_pid_is_gone(on_this_node: None, sleepers: list[subprocess.Popen]) -> None:
    pids = {f"replica:0:t-{i}": p.pid for i, p in enumerate(sleepers)}
    started = {p.pid: start_time(p.pid) for p in sleepers}
    kill_processes(pids, "rafka", NODE, timeout_s=10)
    assert running(started) == {}   # (reaped on the way: the test is their parent, as the raylet is for actors)


def test_a_pid_already_gone_is_no_failure(on_this_node: None, sleepers: list[subprocess.Popen]) -> None:
    sleepers[0].kill()
    sleepers[0].wait()
    started = {p.pid: start_time(p.pid) for p in sleepers[1:]}
    kill_processes({f"replica:0:t-{i}": p.pid for i, p in enumerate(sleepers)}, "rafka", NODE, timeout_s=10)
    assert running(started) == {}


def test_a_survivor_is_reported_by_name_and_pid(on_this_node: None, monkeypatch: pytest.MonkeyPatch,
                                                sleepers: list[subprocess.Popen]) -> None:
    """A process the signal did not end (stuck in the kernel, say): the only failure."""
    monkeypatch.setattr(supervisor, "signal_processes", lambda processes, sig: None)
    with pytest.raises(ProcessesSurvivedError, match=rf"replica:0:t-1 \(pid {sleepers[1].pid}\)"):
        kill_processes({f"replica:0:t-{i}": p.pid for i, p in enumerate(sleepers)}, "rafka", NODE, timeout_s=0.3)
    assert all(p.poll() is None for p in sleepers)


def test_a_name_ray_still_holds_is_no_failure(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
                                              sleepers: list[subprocess.Popen]) -> None:
    """The processes are gone: a name Ray has not released yet is logged, not raised."""
    monkeypatch.setattr(supervisor, "current_node_id", lambda: NODE)
    monkeypatch.setattr(supervisor, "find_actor", lambda name, namespace: object())
    started = {sleepers[0].pid: start_time(sleepers[0].pid)}
    kill_processes({"coordinator:0": sleepers[0].pid}, "rafka", NODE, timeout_s=10, name_release_s=0.2)
    assert running(started) == {}
    assert "still holds the names ['coordinator:0']" in caplog.text
