"""The benchmarks' CPU accounting: /proc readings of a process that burns CPU, and py-spy's
collapsed stacks reduced to self and inclusive shares."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from _cpu_profile import CpuSampler, hot_frames, process_cpu_s  # noqa: E402

from tests.waiting import wait_until  # noqa: E402


def _started(code: str) -> subprocess.Popen:
    """A child running `code` after printing 'up' (so its interpreter start is not in the window)."""
    child = subprocess.Popen([sys.executable, "-c", "print('up', flush=True)\n" + code],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "up"
    return child


def test_a_busy_child_is_charged_about_a_core_and_an_idle_one_nothing() -> None:
    busy = _started("while True: pass")
    idle = _started("import sys; sys.stdin.read()")   # blocks until its stdin closes
    try:
        sampler = CpuSampler({"busy": [busy.pid], "idle": [idle.pid], "gone": [2 ** 22 + 7]})
        sampler.start()
        wait_until(lambda: process_cpu_s(busy.pid) - sampler._before[busy.pid] >= 0.5, timeout_s=30,
                   message="the busy child used half a CPU second")
        window = sampler.stop()
    finally:
        for child in (busy, idle):
            child.kill()
            child.wait()
    assert window.by_role["busy"] >= 0.5
    assert window.by_role.get("idle", 0.0) < 0.05
    assert "gone" not in window.by_role and window.processes == {"busy": 1, "idle": 1}
    assert 0.0 < window.machine_busy <= 1.0
    assert window.cores("busy") <= 1.05


def test_hot_frames_counts_self_at_the_innermost_frame_and_inclusive_once_per_stack() -> None:
    collapsed = [
        "serve (rafka/net/server.py:10);handle (rafka/net/handlers.py:120);append (rafka/log.py:7) 6",
        "serve (rafka/net/server.py:11);handle (rafka/net/handlers.py:121) 3",
        "serve (rafka/net/server.py:10);recurse (r.py:1);recurse (r.py:2) 1",
        "not a sample line",
    ]
    hot = hot_frames(collapsed, top=3)
    assert hot.samples == 10
    assert hot.self_share == [("append (log.py)", 0.6), ("handle (handlers.py)", 0.3), ("recurse (r.py)", 0.1)]
    assert hot.inclusive_share[:2] == [("serve (server.py)", 1.0), ("handle (handlers.py)", 0.9)]
    assert hot_frames([]).samples == 0
