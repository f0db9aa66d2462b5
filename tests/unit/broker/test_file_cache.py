"""FileCache: a segment file replaced under the same name (log cleaner swap) is reopened."""
from __future__ import annotations

import os

from rafka.net.server import FileCache


def test_file_replaced_under_the_same_name_is_reopened(tmp_path):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"old bytes")
    cache = FileCache(capacity=4)
    old = cache.get(str(path))
    assert os.pread(old.fileno(), 9, 0) == b"old bytes"
    assert cache.get(str(path)) is old  # same inode: reused

    os.rename(path, str(path) + ".deleted")
    (tmp_path / "new").write_bytes(b"new bytes")
    os.rename(tmp_path / "new", path)

    new = cache.get(str(path))
    assert new is not old
    assert os.pread(new.fileno(), 9, 0) == b"new bytes"
    assert os.pread(old.fileno(), 9, 0) == b"old bytes"  # a sendfile still holding it is unaffected
    cache.close()


def test_a_region_reads_its_own_file_through_a_swap_or_a_rename(tmp_path):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"old bytes")
    inode = os.stat(path).st_ino
    os.rename(path, str(path) + ".deleted")       # retention or the cleaner set it aside
    (tmp_path / "new").write_bytes(b"new bytes")
    os.rename(tmp_path / "new", path)            # a cleaned segment took the name
    cache = FileCache(capacity=4)
    f = cache.get(str(path), inode)              # not cached before: found under .deleted
    assert os.pread(f.fileno(), 9, 0) == b"old bytes"
    new = cache.get(str(path), os.stat(path).st_ino)
    assert os.pread(new.fileno(), 9, 0) == b"new bytes"
    cache.close()


def test_a_region_whose_file_is_gone_is_refused_not_served_from_another_file(tmp_path):
    import pytest
    from rafka.net.server import StaleRegionError

    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"old bytes")
    inode = os.stat(path).st_ino
    holder = open(path, "rb")  # keeps the inode number from being reused by the next file
    os.unlink(path)
    (tmp_path / "new").write_bytes(b"new bytes")
    os.rename(tmp_path / "new", path)
    cache = FileCache(capacity=4)
    with pytest.raises(StaleRegionError):
        cache.get(str(path), inode)
    cache.close()
    holder.close()
