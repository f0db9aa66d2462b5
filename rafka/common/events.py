"""Waiting on several asyncio events at once (no such call in asyncio itself)."""
from __future__ import annotations

import asyncio


async def first_of(events: list[asyncio.Event], timeout_s: float | None) -> None:
    """Until one of `events` is set or `timeout_s` passes (None: no limit)."""
    waits = [asyncio.ensure_future(event.wait()) for event in events]
    try:
        await asyncio.wait(waits, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            wait.cancel()
