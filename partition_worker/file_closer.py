"""Closing files on a thread of their own, for a process whose event loop must not stall.

The last close of a file whose name is gone (a deleted segment, kept open for a reader) is
when the filesystem frees its blocks, inside `close()`: on ext4 here ~0.1 ms per MB, and
twelve segments of a deleted 100 MB topic took 197-208 ms. The front end holds segment files
for sendfile and closes them as its cache sweeps out deleted ones, on the event loop that
serves every client; a fetch answered during such a sweep reached its consumer 200-300 ms
late (`net.server`). Kafka keeps that work off its request threads too: segments are deleted
by its scheduler thread, after `file.delete.delay.ms`.

A `BackgroundCloser` closes what it is given in order, on one daemon thread started at first
use. A file handed over must not be used again by the caller; its descriptor number is not
reused until the close has happened, so nothing else can read through it meanwhile.
"""
from __future__ import annotations

import logging
import os
import queue
import threading
from typing import Any

log = logging.getLogger(__name__)


def close_now(f: Any) -> None:
    """Close a descriptor (int) or a file object, here and now."""
    if isinstance(f, int):
        os.close(f)
    else:
        f.close()


class BackgroundCloser:
    """Closes files on its own thread, in the order given (see the module docstring)."""

    def __init__(self, name: str = "rafka-file-closer") -> None:
        self._name = name
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()

    def __call__(self, f: Any) -> None:
        """Close `f` (a descriptor or a file object) soon, on the closer's thread."""
        self._ensure_started()
        self._queue.put(f)

    def wait_idle(self, timeout_s: float | None = None) -> bool:
        """Wait until everything handed over before this call is closed; False on timeout."""
        done = threading.Event()
        self._ensure_started()
        self._queue.put(done)
        return done.wait(timeout_s)

    def _ensure_started(self) -> None:
        if self._thread is not None:
            return
        with self._start_lock:
            if self._thread is None:
                thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                thread.start()
                self._thread = thread

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if isinstance(item, threading.Event):
                item.set()
                continue
            try:
                close_now(item)
            except OSError as e:   # (nothing to hand it back to: a close that fails loses nothing read)
                log.warning("closing %r failed: %s", item, e)


_process_closer = BackgroundCloser()


def background_closer() -> BackgroundCloser:
    """The process's one closer thread (started at first use)."""
    return _process_closer


__all__ = ["BackgroundCloser", "background_closer", "close_now"]
