"""Files closed on a thread of their own (`file_closer`), and the front end's segment-file cache
closing through it: a slow last close (a deleted segment's blocks being freed) never holds the
caller, whose event loop serves every client."""
from __future__ import annotations

import logging
import os
import threading

from rafka.partition_worker import segment_reader
from rafka.partition_worker.file_cache import SegmentFileCache
from rafka.partition_worker.file_closer import BackgroundCloser, background_closer
from rafka.partition_worker.messages import Region
from rafka.partition_worker.segment_reader import region_file_cache, region_key


class SlowFile:
    """A real file whose close waits for `go` (as the last close of a big deleted file takes
    time) and notes which thread closed it."""

    def __init__(self, path, go: threading.Event | None = None) -> None:
        self._file = open(path, "rb")
        self._go = go
        self.closed_by: int | None = None

    def fileno(self) -> int:
        return self._file.fileno()

    @property
    def closed(self) -> bool:
        return self._file.closed

    def close(self) -> None:
        if self._go is not None:
            assert self._go.wait(10)
        self.closed_by = threading.get_ident()
        self._file.close()


def test_files_close_in_order_on_the_closers_thread(tmp_path):
    closer = BackgroundCloser()
    order: list[str] = []

    class Noted:
        def __init__(self, name: str) -> None:
            self.name = name

        def close(self) -> None:
            order.append(self.name)

    (tmp_path / "f").write_bytes(b"x")
    fd = os.open(tmp_path / "f", os.O_RDONLY)
    real = SlowFile(tmp_path / "f")
    for item in (Noted("a"), real, fd, Noted("b")):
        closer(item)
    assert closer.wait_idle(10)
    assert order == ["a", "b"]
    assert real.closed and real.closed_by != threading.get_ident()
    try:
        os.fstat(fd)
        raise AssertionError("the descriptor is still open")
    except OSError:
        pass


def test_a_slow_close_does_not_hold_the_caller(tmp_path):
    (tmp_path / "seg.log").write_bytes(b"data")
    go = threading.Event()
    slow = SlowFile(tmp_path / "seg.log", go)
    closer = BackgroundCloser()
    closer(slow)                        # returns while the close is still waiting
    assert not slow.closed and not closer.wait_idle(0.05)
    go.set()
    assert closer.wait_idle(10) and slow.closed


def test_a_failed_close_is_logged_and_the_next_ones_still_close(tmp_path, caplog):
    class Failing:
        def close(self) -> None:
            raise OSError(5, "Input/output error")

    (tmp_path / "f").write_bytes(b"x")
    after = SlowFile(tmp_path / "f")
    closer = BackgroundCloser()
    with caplog.at_level(logging.WARNING, logger="rafka.partition_worker.file_closer"):
        closer(Failing())
        closer(after)
        assert closer.wait_idle(10)
    assert after.closed
    assert any("Input/output error" in r.getMessage() for r in caplog.records)


def test_a_cache_sweep_returns_before_a_deleted_files_slow_close(tmp_path):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"segment")
    go = threading.Event()
    opened: list[SlowFile] = []

    def opener(_key):
        opened.append(SlowFile(path, go))
        return opened[-1]

    closer = BackgroundCloser()
    cache = SegmentFileCache(4, opener=opener, closer=closer)
    cache.release(cache.acquire(["seg"]))
    os.unlink(path)                                      # the segment is deleted
    assert cache.sweep() == 1 and len(cache) == 0        # swept while the close still waits
    assert not opened[0].closed
    go.set()
    assert closer.wait_idle(10) and opened[0].closed


def test_the_front_ends_cache_closes_on_the_process_closer(tmp_path, monkeypatch):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"segment")
    opened: list[SlowFile] = []

    def open_region_file(p, inode):
        opened.append(SlowFile(p))
        return opened[-1]

    monkeypatch.setattr(segment_reader, "open_region_file", open_region_file)
    cache = region_file_cache()
    key = region_key(Region(str(path), 0, 7, os.stat(path).st_ino))
    cache.release(cache.acquire([key]))
    os.unlink(path)
    assert cache.sweep() == 1
    assert background_closer().wait_idle(10)
    assert opened[0].closed and opened[0].closed_by != threading.get_ident()
