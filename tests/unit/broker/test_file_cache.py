"""The front end's cache of segment files (the one `SegmentFileCache`, as `region_file_cache`) and
response writing when a fetched segment is deleted or swapped (real files, a real loopback
socket; no Ray)."""
from __future__ import annotations

import asyncio
import os
import struct

from rafka.net.handlers import FileRecords
from rafka.net.server import KafkaServer
from rafka.partition_worker.file_reaper import file_reaper
from rafka.partition_worker.messages import Region
from rafka.partition_worker.segment_reader import REGION_FILES_SWEEP_INTERVAL_S, region_file_cache, region_key


def segment(path, data: bytes) -> Region:
    path.write_bytes(data)
    return Region(str(path), 0, len(data), os.stat(path).st_ino)


def closed(f) -> bool:
    """Whether `f` is closed, once the reaper thread has closed everything handed to it."""
    assert file_reaper().wait_idle(10)
    return f.closed


def read(cache, region: Region) -> bytes | None:
    """The region's bytes through the cache, or None when its file is gone."""
    files = cache.acquire([region_key(region)])
    if files is None:
        return None
    try:
        return os.pread(files[0].fileno(), region.length, region.position)
    finally:
        cache.release(files)


def test_files_are_found_by_identity_through_deletion_and_swap(tmp_path):
    old = segment(tmp_path / "00000000000000000000.log", b"old-bytes")
    cache = region_file_cache()
    assert read(cache, old) == b"old-bytes"
    os.replace(old.path, old.path + ".deleted")              # retention
    new = segment(tmp_path / "00000000000000000000.log", b"NEW-BYTES")  # a compaction swap's new file
    assert new.inode != old.inode
    assert read(cache, old) == b"old-bytes"   # the cached file is still the old one
    fresh = region_file_cache()
    assert read(fresh, old) == b"old-bytes"   # found as .deleted
    assert read(fresh, new) == b"NEW-BYTES"
    assert read(fresh, Region(old.path, 0, 9, new.inode + old.inode + 1)) is None  # never another file's bytes
    os.unlink(old.path + ".deleted")
    assert read(region_file_cache(), old) is None


def test_acquire_pins_every_file_or_none(tmp_path):
    present = segment(tmp_path / "a.log", b"a" * 10)
    gone = Region(str(tmp_path / "b.log"), 0, 5, 12345)
    other = segment(tmp_path / "c.log", b"c")
    cache = region_file_cache(capacity=1)
    assert cache.acquire([region_key(present), region_key(gone)]) is None
    files = cache.acquire([region_key(present)])
    others = cache.acquire([region_key(other)])   # over capacity while both are pinned...
    assert len(cache) == 2 and not closed(files[0]) and not closed(others[0])
    cache.release(files)                           # ...the least recently used closes once released
    assert closed(files[0]) and len(cache) == 1 and not closed(others[0])
    cache.release(others)
    assert not closed(others[0]) and len(cache) == 1


def test_a_failed_acquire_leaves_nothing_pinned(tmp_path):
    present = segment(tmp_path / "a.log", b"a")
    other = segment(tmp_path / "c.log", b"c")
    cache = region_file_cache(capacity=1)
    files = cache.acquire([region_key(present)])
    cache.release(files)
    assert cache.acquire([region_key(present), region_key(Region(str(tmp_path / "b.log"), 0, 1, 1))]) is None
    cache.release(cache.acquire([region_key(other)]))  # evicts the present file: it is not pinned
    assert closed(files[0]) and len(cache) == 1


def test_sweep_closes_files_whose_segment_was_removed(tmp_path):
    kept = segment(tmp_path / "kept.log", b"k")
    removed = segment(tmp_path / "removed.log", b"r")
    cache = region_file_cache()
    f_kept, f_removed = cache.acquire([region_key(kept), region_key(removed)])
    cache.release([f_kept, f_removed])
    os.unlink(removed.path)
    assert cache.sweep() == 1
    assert closed(f_removed) and not closed(f_kept) and len(cache) == 1


def test_a_swept_file_being_sent_closes_when_released(tmp_path):
    removed = segment(tmp_path / "removed.log", b"r")
    cache = region_file_cache()
    files = cache.acquire([region_key(removed)])
    os.unlink(removed.path)
    assert cache.sweep() == 1 and len(cache) == 0 and not closed(files[0])
    cache.release(files)
    assert closed(files[0])


def test_acquire_sweeps_by_itself_once_the_interval_has_passed(tmp_path):
    removed = segment(tmp_path / "removed.log", b"r")
    kept = segment(tmp_path / "kept.log", b"k")
    now = [1000.0]
    cache = region_file_cache(clock=lambda: now[0])
    files = cache.acquire([region_key(removed)])
    cache.release(files)
    os.unlink(removed.path)
    now[0] += REGION_FILES_SWEEP_INTERVAL_S - 1
    cache.release(cache.acquire([region_key(kept)]))
    assert not closed(files[0])                     # not yet due
    now[0] += 1
    cache.release(cache.acquire([region_key(kept)]))
    assert closed(files[0]) and len(cache) == 1


class _OneAnswer:
    """A handler answering every request with a header and the given regions."""

    def __init__(self, regions: tuple) -> None:
        self.regions = regions

    async def handle(self, frame: memoryview, peer: str) -> list:
        return [b"HEAD", FileRecords(self.regions)]


async def _ask(regions: tuple) -> bytes:
    """One request to a real server; the response frame's bytes, or what came before the
    server closed the connection."""
    server = KafkaServer(_OneAnswer(regions), host="127.0.0.1", port=0, broker_id=0)
    port = await server.start()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(struct.pack(">i", 4) + b"ping")
        await writer.drain()
        try:
            head = await asyncio.wait_for(reader.readexactly(4), 10)
            return head + await asyncio.wait_for(reader.readexactly(struct.unpack(">i", head)[0]), 10)
        except asyncio.IncompleteReadError as e:
            return e.partial
    finally:
        writer.close()
        await server.stop()


def test_response_is_sent_whole_from_a_deleted_segment(tmp_path):
    region = segment(tmp_path / "00000000000000000000.log", b"0123456789")
    os.replace(region.path, region.path + ".deleted")
    assert asyncio.run(_ask((region,))) == struct.pack(">i", 14) + b"HEAD0123456789"


def test_a_segment_gone_for_good_closes_the_connection_without_a_partial_frame(tmp_path, caplog):
    region = segment(tmp_path / "00000000000000000000.log", b"0123456789")
    os.unlink(region.path)
    assert asyncio.run(_ask((region,))) == b""
    assert "deleted before it could be sent" in caplog.text
