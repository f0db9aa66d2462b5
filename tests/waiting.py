"""Waiting on conditions with a deadline, never for a fixed time."""
from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")


def wait_until(condition: Callable[[], T], timeout_s: float = 10.0, interval_s: float = 0.05,
               message: str = "condition") -> T:
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{message} not met within {timeout_s} s")
        time.sleep(interval_s)
