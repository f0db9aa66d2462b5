"""Closing and removing files on a thread of their own, for processes whose event loop must not stall.

A file's blocks are freed when its last name and its last open descriptor are both gone,
inside whichever call comes last, `close()` or `unlink()`: on ext4 here ~0.1 ms per MB, and
twelve segments of a deleted 100 MB topic took 197-208 ms. Two processes do that work on an
event loop that must keep serving:
- the front end holds segment files for sendfile and closes them as its cache sweeps out
  deleted ones, on the loop that serves every client: a fetch answered during such a sweep
  reached its consumer 200-300 ms late;
- a replica removes its `.deleted` segment files once file.delete.delay.ms has passed, on the
  loop that answers its partition's appends and reads (a 1 GiB segment: ~100 ms).
Kafka keeps that work off its request threads too: its scheduler thread deletes segments.

A `FileReaper` closes and removes what it is given, in order, on one daemon thread started
at first use. A file handed over must not be used again by the caller; its descriptor number
is not reused until the close has happened, so nothing else reads through it meanwhile. A
`.deleted` file not yet removed when the process stops is removed when its log next opens.
"""
from __future__ import annotations

import logging
import os
import queue
import threading
from typing import Any, Callable

log = logging.getLogger(__name__)


def close_now(f: Any) -> None:
    """Close a descriptor (int) or a file object, here and now."""
    if isinstance(f, int):
        os.close(f)
    else:
        f.close()


def remove_now(path: str | os.PathLike) -> None:
    """Remove a file, here and now; one already gone is no error."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


class FileReaper:
    """Closes and removes files on its own thread, in the order given (see the module docstring)."""

    def __init__(self, name: str = "rafka-file-reaper") -> None:
        self._name = name
        # (what to do, what it is done to: named in the log if it fails)
        self._queue: queue.SimpleQueue[tuple[Callable[[Any], None], Any]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()

    def close(self, f: Any) -> None:
        """Close `f` (a descriptor or a file object) soon, on the reaper's thread."""
        self._put(close_now, f)

    def remove(self, path: str | os.PathLike) -> None:
        """Remove the file at `path` soon, on the reaper's thread (gone already: nothing to do)."""
        self._put(remove_now, path)

    def wait_idle(self, timeout_s: float | None = None) -> bool:
        """Wait until everything handed over before this call is done; False on timeout."""
        done = threading.Event()
        self._put(threading.Event.set, done)
        return done.wait(timeout_s)

    def _put(self, action: Callable[[Any], None], target: Any) -> None:
        if self._thread is None:
            with self._start_lock:
                if self._thread is None:
                    thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                    thread.start()
                    self._thread = thread
        self._queue.put((action, target))

    def _run(self) -> None:
        while True:
            action, target = self._queue.get()
            try:
                action(target)
            except OSError as e:   # (nothing to hand it back to; a delayed delete is retried at the next open)
                log.warning("could not %s %r: %s", action.__name__.removesuffix("_now"), target, e)


_process_reaper = FileReaper()


def file_reaper() -> FileReaper:
    """The process's one reaper thread (started at first use)."""
    return _process_reaper


__all__ = ["FileReaper", "close_now", "file_reaper", "remove_now"]
