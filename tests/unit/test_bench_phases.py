"""The benchmarks' phase runner: stdout kept for results while Ray's forwarded logs go to stderr."""
from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from harness.phases import stdout_to_stderr  # noqa: E402


def test_output_inside_stdout_to_stderr_reaches_stderr_and_stdout_comes_back(capfd) -> None:
    print("result before")
    with stdout_to_stderr():
        print("a forwarded log line")
        os.write(1, b"a child's line\n")   # a child process or Ray writes to fd 1 itself
    print("result after")
    out, err = capfd.readouterr()
    assert out.splitlines() == ["result before", "result after"]
    assert err.splitlines() == ["a forwarded log line", "a child's line"]
