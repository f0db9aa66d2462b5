"""Finding and stopping the processes a command started (`rafka up`'s Ray), on real processes."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from rafka.common.process_tree import descendants, naming, running, start_time, stop_processes
from tests.waiting import wait_until

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads Linux's /proc")

# Child programs that wait until a signal ends them (SIGKILL, or SIGTERM where not ignored).
UNTIL_KILLED = "import signal\nwhile True:\n    signal.pause()"
IGNORES_SIGTERM = ("import signal; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                   "print('ready', flush=True)\nwhile True:\n    signal.pause()")


def spawn(*argv: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen(list(argv), **kwargs)


def test_descendants_reach_grandchildren_and_stop_processes_ends_them():
    shell = spawn("bash", "-c", "sleep 600 & (sleep 600 & wait) & wait")
    try:
        tree = wait_until(lambda: len(d := descendants(shell.pid)) == 3 and d, timeout_s=10,
                          message="two sleeps and a subshell below the shell")
        assert all(start_time(pid) == started for pid, started in tree.items())
        report = stop_processes(tree, grace_s=5)
        assert report.stopped == sorted(tree) and not report.killed and not report.survivors
        assert running(tree) == {}
    finally:
        shell.kill()
        shell.wait()


def test_a_process_ignoring_sigterm_is_killed_after_the_grace_period():
    child = spawn(sys.executable, "-c", IGNORES_SIGTERM, stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "ready"
    started = time.monotonic()
    report = stop_processes({child.pid: start_time(child.pid)}, grace_s=0.5, kill_wait_s=5)
    assert report.killed == [child.pid] and not report.terminated and not report.survivors
    assert time.monotonic() - started < 5
    assert child.poll() is not None   # reaped by stop_processes (so Popen cannot see the signal)
    child.stdout.close()


def test_a_pid_that_now_names_another_process_is_never_signalled():
    child = spawn("sleep", "600")
    try:
        stale = {child.pid: start_time(child.pid) - 1}   # the same pid, started at another time
        assert running(stale) == {}
        assert stop_processes(stale, grace_s=0.1).stopped == []
        assert child.poll() is None
    finally:
        child.kill()
        child.wait()


def test_a_subreaper_adopts_the_orphans_of_its_descendants():
    """What keeps Ray's agents in `rafka up`'s tree when the raylet that started them dies."""
    script = ("import os, subprocess, sys, time\n"
              "from rafka.common.process_tree import become_subreaper\n"
              "assert become_subreaper()\n"
              "middle = subprocess.Popen([sys.executable, '-c', 'import subprocess; "
              "print(subprocess.Popen([\"sleep\", \"600\"], start_new_session=True).pid)'], stdout=subprocess.PIPE)\n"
              "orphan = int(middle.stdout.readline()); middle.wait()\n"
              "deadline = time.monotonic() + 10\n"
              "while time.monotonic() < deadline:\n"
              "    ppid = int(open(f'/proc/{orphan}/stat').read().rsplit(')', 1)[1].split()[1])\n"
              "    if ppid == os.getpid(): break\n"
              "    time.sleep(0.05)\n"
              "print(orphan, ppid == os.getpid(), flush=True)\n"
              "os.kill(orphan, 9); os.waitpid(orphan, 0)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    orphan, adopted = out.stdout.split()
    assert adopted == "True"
    assert not os.path.exists(f"/proc/{orphan}")


def test_naming_finds_a_session_s_processes_by_a_path_on_their_command_line(tmp_path):
    marker = str(tmp_path / "session_x")
    ours = spawn(sys.executable, "-c", UNTIL_KILLED, marker)
    other = spawn("tail", "-f", "/dev/null", marker)
    try:
        wait_until(lambda: {ours.pid, other.pid} <= set(naming(marker)), timeout_s=10, message="both started")
        assert set(naming(marker)) == {ours.pid, other.pid}
        assert set(naming(marker, (os.path.realpath(sys.executable),))) == {ours.pid}   # not the `tail`
        assert naming(marker + "-another-session") == {}
    finally:
        for p in (ours, other):
            p.kill()
            p.wait()
