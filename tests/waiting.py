"""Waiting on conditions with a deadline, never for a fixed time."""
from __future__ import annotations

import asyncio
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


async def eventually(condition: Callable[[], T], message: str = "condition", timeout_s: float = 10.0,
                     interval_s: float = 0.01) -> T:
    """`wait_until` inside an event loop: the loop runs on while it waits."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        assert asyncio.get_running_loop().time() < deadline, f"{message} not met within {timeout_s} s"
        await asyncio.sleep(interval_s)
