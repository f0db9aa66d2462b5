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
