"""A log whose disk fills or fails: the write that hits the error is refused with
KafkaStorageError (KAFKA_STORAGE_ERROR), the log takes no more writes, reads of what it holds
go on, and reopening it finds every append that succeeded (see storage_failure.py)."""
from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from rafka.common.config import LogConfig
from rafka.common.errors import ErrorCode, KafkaStorageError
from rafka.common.types import TopicPartition
from rafka.partition_worker import index as index_module
from rafka.partition_worker import segment as segment_module
from rafka.partition_worker.broker_checkpoints import BrokerCheckpoints
from rafka.partition_worker.log import CLEAN_SHUTDOWN_FILE
from rafka.partition_worker.log_dirs import choose_log_dir
from rafka.partition_worker.record_batch import Record, encode_batch
from tests.small_fs import small_filesystem
from tests.unit.storage.log_checks import read_bases
from tests.unit.storage.replica_logs import NOW, close_logs, open_log  # noqa: F401 - a fixture

CONFIG = LogConfig(segment_bytes=64 * 1024, index_interval_bytes=256, segment_index_bytes=4096)


def batch(i: int, size: int = 1000) -> bytes:
    return encode_batch([Record(0, NOW + i, f"k{i}".encode(), bytes([i % 251]) * size)])


def fail_with(monkeypatch, module, name: str, code: int = errno.ENOSPC, *, when=lambda *a: True) -> None:
    real = getattr(module.os, name)

    def failing(*args):
        if when(*args):
            raise OSError(code, os.strerror(code))
        return real(*args)
    monkeypatch.setattr(module.os, name, failing)


def fill(path: Path) -> None:
    """Write `path` until its filesystem is full."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        with pytest.raises(OSError) as full:
            while True:
                os.write(fd, b"x" * 4096)
        assert full.value.errno == errno.ENOSPC
    finally:
        os.close(fd)


def append(log, i: int):
    return log.append(batch(i), leader_epoch=0, max_batch_bytes=1 << 20, now_ms=NOW + i)


def test_a_full_small_filesystem_refuses_the_next_append_and_keeps_every_acknowledged_one(tmp_path):
    with small_filesystem(tmp_path / "small", 1 << 20) as root:
        log = open_log(root / "t-0", CONFIG)
        acknowledged = []
        with pytest.raises(KafkaStorageError) as refused:
            for i in range(10_000):
                acknowledged.append(append(log, i).base_offset)
        assert "No space left on device" in str(refused.value) and log.offline
        assert 500 < len(acknowledged) < 1100   # 1 MiB of ~1 KiB batches, segment files and indexes
        end = log.log_end_offset
        assert end == len(acknowledged)
        assert read_bases(log) == acknowledged                  # reads of what is on disk go on
        with pytest.raises(KafkaStorageError):                   # and no write, even with room again
            log.truncate_to(0)
        assert log.log_end_offset == end
        log.close()                                               # no flush, no clean marker
        assert not (root / "t-0" / CLEAN_SHUTDOWN_FILE).exists()
        reopened = open_log(root / "t-0", CONFIG)
        assert reopened.log_end_offset == end and not reopened.offline
        assert read_bases(reopened) == acknowledged


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EIO, errno.EROFS], ids=["ENOSPC", "EIO", "EROFS"])
def test_a_failed_write_of_the_log_file_leaves_the_log_as_it_was(tmp_path, monkeypatch, code):
    log = open_log(tmp_path / "t-0", CONFIG)
    for i in range(5):
        append(log, i)
    size = log.segments[-1].size
    fail_with(monkeypatch, segment_module, "write", code)
    with pytest.raises(KafkaStorageError) as refused:
        append(log, 5)
    assert refused.value.code is ErrorCode.KAFKA_STORAGE_ERROR
    assert errno.errorcode[code] in str(refused.value)
    assert (log.log_end_offset, log.segments[-1].size, os.path.getsize(log.segments[-1].log_path)) == (5, size, size)
    monkeypatch.undo()
    with pytest.raises(KafkaStorageError):
        append(log, 5)


def test_a_failed_index_write_undoes_the_append(tmp_path, monkeypatch):
    log = open_log(tmp_path / "t-0", CONFIG)
    append(log, 0)
    entries = log.segments[-1].index.entries()
    fail_with(monkeypatch, index_module, "pwrite")   # the next batch is past index.interval.bytes
    with pytest.raises(KafkaStorageError):
        append(log, 1)
    seg = log.segments[-1]
    assert (log.log_end_offset, seg.size, seg.index.entries()) == (1, os.path.getsize(seg.log_path), entries)
    assert read_bases(log) == [0]


def test_a_failed_fsync_takes_the_log_offline(tmp_path, monkeypatch):
    log = open_log(tmp_path / "t-0", LogConfig(segment_bytes=64 * 1024, flush_messages=1))
    append(log, 0)
    fail_with(monkeypatch, segment_module, "fsync", errno.EIO)
    with pytest.raises(KafkaStorageError, match="EIO"):
        append(log, 1)
    with pytest.raises(KafkaStorageError):
        log.maybe_flush(NOW + 10**9)
    assert log.recovery_point == 1


def test_a_failed_producer_snapshot_at_a_roll_takes_the_log_offline(tmp_path, monkeypatch):
    log = open_log(tmp_path / "t-0", LogConfig(segment_bytes=4096))
    append(log, 0), append(log, 1), append(log, 2)
    assert len(log.segments) == 1

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(log.producer_state, "write_snapshot", full)
    with pytest.raises(KafkaStorageError, match="ENOSPC"):
        append(log, 3)                                    # rolls first: the snapshot fails
    assert log.offline and read_bases(log) == [0, 1, 2]


def test_marked_offline_from_outside_it_refuses_writes_and_still_reads(tmp_path):
    log = open_log(tmp_path / "t-0", CONFIG)
    append(log, 0)
    log.mark_offline("log dir failed under another partition")
    with pytest.raises(KafkaStorageError, match="another partition"):
        append(log, 1)
    assert read_bases(log) == [0]


def test_a_checkpoint_write_to_a_full_dir_fails_that_dir_only(tmp_path):
    tp_small, tp_big = TopicPartition("small", 0), TopicPartition("big", 0)
    with small_filesystem(tmp_path / "small", 64 * 1024) as small:
        big = tmp_path / "big"
        (small / str(tp_small)).mkdir()
        (big / str(tp_big)).mkdir(parents=True)
        checkpoints = BrokerCheckpoints((str(small), str(big)))
        checkpoints.place(tp_small, str(small))
        checkpoints.place(tp_big, str(big))
        checkpoints.update(tp_small, recovery_point=5)
        checkpoints.update(tp_big, recovery_point=7)
        fill(small / "filler")
        failed = checkpoints.write()
        assert list(failed) == [str(small)] and "ENOSPC" in failed[str(small)]
        assert "big 0 7" in (big / "recovery-point-offset-checkpoint").read_text()
        assert checkpoints.write(skip_dirs=frozenset({str(small)})) == {}


def test_new_partitions_go_to_the_dirs_that_did_not_fail(tmp_path):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    assert choose_log_dir((a, b), TopicPartition("t", 0)) == a
    assert choose_log_dir((a, b), TopicPartition("t", 0), failed={a}) == b
    (Path(a) / "t-1").mkdir(parents=True)
    (Path(a) / "t-1" / "00000000000000000000.log").write_bytes(b"x")
    assert choose_log_dir((a, b), TopicPartition("t", 1), failed={a}) == a   # where it is: served read-only
    (Path(a) / "t-3").mkdir()
    (Path(a) / "t-3" / "00000000000000000000.log").write_bytes(b"")
    assert choose_log_dir((a, b), TopicPartition("t", 3), failed={a}) == b   # placed there as it failed: moved
    assert not (Path(a) / "t-3").exists()
    with pytest.raises(KafkaStorageError):
        choose_log_dir((a, b), TopicPartition("t", 2), failed={a, b})
