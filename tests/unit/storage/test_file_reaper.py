"""Files closed and removed on a thread of their own (`file_reaper`): the front end's segment-file
cache closes through it and a replica's log removes its deleted segments through it, so a slow
last close or unlink (a deleted segment's blocks being freed) never holds the caller's event loop."""
from __future__ import annotations

import logging
import os
import threading
import time

from rafka.partition_worker import segment_reader
from rafka.partition_worker.file_cache import SegmentFileCache
from rafka.partition_worker.file_reaper import FileReaper, file_reaper
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


def test_files_close_in_order_on_the_reapers_thread(tmp_path):
    reaper = FileReaper()
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
        reaper.close(item)
    assert reaper.wait_idle(10)
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
    reaper = FileReaper()
    reaper.close(slow)                        # returns while the close is still waiting
    assert not slow.closed and not reaper.wait_idle(0.05)
    go.set()
    assert reaper.wait_idle(10) and slow.closed


def test_a_failed_close_is_logged_and_the_next_ones_still_close(tmp_path, caplog):
    class Failing:
        def close(self) -> None:
            raise OSError(5, "Input/output error")

    (tmp_path / "f").write_bytes(b"x")
    after = SlowFile(tmp_path / "f")
    reaper = FileReaper()
    with caplog.at_level(logging.WARNING, logger="rafka.partition_worker.file_reaper"):
        reaper.close(Failing())
        reaper.close(after)
        assert reaper.wait_idle(10)
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

    reaper = FileReaper()
    cache = SegmentFileCache(4, opener=opener, closer=reaper.close)
    cache.release(cache.acquire(["seg"]))
    os.unlink(path)                                      # the segment is deleted
    assert cache.sweep() == 1 and len(cache) == 0        # swept while the close still waits
    assert not opened[0].closed
    go.set()
    assert reaper.wait_idle(10) and opened[0].closed


def test_the_front_ends_cache_closes_on_the_process_reaper(tmp_path, monkeypatch):
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
    assert file_reaper().wait_idle(10)
    assert opened[0].closed and opened[0].closed_by != threading.get_ident()


def test_remove_takes_a_file_away_on_the_reapers_thread_and_a_missing_one_is_no_error(tmp_path):
    (tmp_path / "a.deleted").write_bytes(b"a")
    go = threading.Event()
    (tmp_path / "held").write_bytes(b"h")
    reaper = FileReaper()
    reaper.close(SlowFile(tmp_path / "held", go))     # the reaper is busy with a slow close...
    reaper.remove(tmp_path / "a.deleted")
    reaper.remove(tmp_path / "never-was.deleted")
    assert (tmp_path / "a.deleted").exists()          # ...so the removal waits its turn
    go.set()
    assert reaper.wait_idle(10) and not (tmp_path / "a.deleted").exists()


def test_a_replicas_deleted_segments_are_removed_off_its_loop(tmp_path):
    """A replica's log hands its `.deleted` files to the process's reaper: the removal returns
    while the files are still there (the reaper busy), and they go once it gets to them."""
    from rafka.common.config import LogConfig
    from rafka.common.errors import ErrorCode
    from rafka.common.types import TopicPartition
    from rafka.partition_worker.record_batch import Record, encode_batch
    from rafka.partition_worker.replica_actor import PartitionReplica
    from rafka.partition_worker.replica_state import LeaderAndIsr

    config = LogConfig(segment_bytes=1024, retention_ms=3_600_000, file_delete_delay_ms=60_000)
    replica = PartitionReplica(1, TopicPartition("t", 0), str(tmp_path), config)
    assert replica.become(LeaderAndIsr(1, 1, (1,), (1,), 1)) is ErrorCode.NONE
    old_ms = int(time.time() * 1000) - 7_200_000
    while len(replica.serving.log.segments) < 3:
        replica.append([encode_batch([Record(0, old_ms, b"k", b"v" * 200)])], -1)
    log = replica.serving.log
    assert log.delete_old_segments(log.segments[-1].base_offset, now_ms=old_ms + 7_200_000) >= 2
    directory = tmp_path / "t-0"
    (tmp_path / "held").write_bytes(b"h")
    go = threading.Event()
    file_reaper().close(SlowFile(tmp_path / "held", go))
    try:
        assert log.delete_pending_files(int(time.time() * 1000) + 120_000) >= 2
        assert list(directory.glob("*.deleted"))     # handed over, not removed on this thread
    finally:
        go.set()
    assert file_reaper().wait_idle(10)
    assert not list(directory.glob("*.deleted"))
    replica.close()
