"""Background tasks of one actor, kept and accounted for.

A task made with `asyncio.ensure_future` and dropped can be garbage-collected mid-flight, and
its failure is printed, if ever, as "Task exception was never retrieved" long after. Here
each task is held until it ends, a failure is logged with what the task was for, and all of
them are cancelled together when the actor stops.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any, Awaitable, Callable, Coroutine


class BackgroundTasks:
    """The set of one actor's background tasks."""

    def __init__(self, log: logging.Logger | logging.LoggerAdapter) -> None:
        self._log = log
        self._tasks: set[asyncio.Task] = set()
        self._timers: set[asyncio.TimerHandle] = set()
        self._stopped = False

    def spawn(self, work: Coroutine[Any, Any, Any], what: str) -> asyncio.Task | None:
        """Run `work` in the background; its failure is logged as `what` failing. None once stopped."""
        if self._stopped:
            work.close()
            return None
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(lambda t: self._done(t, what))
        return task

    def later(self, delay_s: float, work: Callable[[], Coroutine[Any, Any, Any]], what: str) -> asyncio.TimerHandle:
        """Spawn `work()` after `delay_s` (cancelled with the rest at `stop`)."""
        def fire() -> None:
            self._timers.discard(timer)
            self.spawn(work(), what)
        timer = asyncio.get_running_loop().call_later(delay_s, fire)
        self._timers.add(timer)
        return timer

    def every(self, interval_s: float, action: Callable[[], Awaitable[Any]], what: str) -> asyncio.Task | None:
        """Run `action` every `interval_s` (the first after one interval); a failing round is
        logged and the next one runs as planned."""
        return self.spawn(self._repeat(interval_s, action, what), what)

    async def _repeat(self, interval_s: float, action: Callable[[], Awaitable[Any]], what: str) -> None:
        while not self._stopped:
            await asyncio.sleep(interval_s)
            try:
                await action()
            except Exception:  # noqa: BLE001 - keep the loop alive; the next round tries again
                self._log.exception("%s failed; trying again in %.1f s", what, interval_s)

    def _done(self, task: asyncio.Task, what: str) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self._log.error("%s failed: %r", what, task.exception(), exc_info=task.exception())

    def __len__(self) -> int:
        return len(self._tasks)

    def stop(self) -> None:
        """Cancel every task and timer; later `spawn`s do nothing."""
        self._stopped = True
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()
        for task in list(self._tasks):
            task.cancel()
