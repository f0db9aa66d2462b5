"""The front end's FileCache and response writing when a fetched segment is deleted or swapped
(real files, a real loopback socket; no Ray)."""
from __future__ import annotations

import asyncio
import os
import struct

from rafka.net.handlers import FileRecords
from rafka.net.server import FileCache, KafkaServer
from rafka.partition_worker.messages import Region


def segment(path, data: bytes) -> Region:
    path.write_bytes(data)
    return Region(str(path), 0, len(data), os.stat(path).st_ino)


def read(f, region: Region) -> bytes:
    return os.pread(f.fileno(), region.length, region.position)


def test_files_are_found_by_identity_through_deletion_and_swap(tmp_path):
    old = segment(tmp_path / "00000000000000000000.log", b"old-bytes")
    cache = FileCache()
    assert read(cache.get(old.path, old.inode), old) == b"old-bytes"
    os.replace(old.path, old.path + ".deleted")              # retention
    new = segment(tmp_path / "00000000000000000000.log", b"NEW-BYTES")  # a compaction swap's new file
    assert new.inode != old.inode
    assert read(cache.get(old.path, old.inode), old) == b"old-bytes"   # the cached file is still the old one
    fresh = FileCache()
    assert read(fresh.get(old.path, old.inode), old) == b"old-bytes"   # found as .deleted
    assert read(fresh.get(new.path, new.inode), new) == b"NEW-BYTES"
    assert fresh.get(old.path, new.inode + old.inode + 1) is None      # never another file's bytes
    os.unlink(old.path + ".deleted")
    assert FileCache().get(old.path, old.inode) is None


def test_acquire_pins_every_file_or_none(tmp_path):
    present = segment(tmp_path / "a.log", b"a" * 10)
    gone = Region(str(tmp_path / "b.log"), 0, 5, 12345)
    cache = FileCache(capacity=1)
    assert cache.acquire([present, gone]) is None
    files = cache.acquire([present])
    other = segment(tmp_path / "c.log", b"c")
    cache.get(other.path, other.inode)               # evicts the pinned file from the cache...
    assert len(cache) == 1 and not files[0].closed   # ...but it stays open while pinned
    cache.release(files)
    assert files[0].closed


def test_sweep_closes_files_whose_segment_was_removed(tmp_path):
    kept = segment(tmp_path / "kept.log", b"k")
    removed = segment(tmp_path / "removed.log", b"r")
    cache = FileCache()
    f_kept, f_removed = cache.get(kept.path, kept.inode), cache.get(removed.path, removed.inode)
    os.unlink(removed.path)
    assert cache.sweep() == 1
    assert f_removed.closed and not f_kept.closed and len(cache) == 1


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
