"""Finding the file a fetch region names, after retention or compaction may have moved it.

A replica answers a fetch with regions (path, position, length, inode) and the front end
opens and sends them later. Meanwhile the segment may be deleted (retention and
DeleteRecords rename its files to `<name>.deleted` and remove them after
`file.delete.delay.ms`, as Kafka) or replaced by a compaction swap that puts a new file at
the same path. So a region's file is looked up by path *and* inode: the path if it is still
the same file, else `<path>.deleted`, else it is gone. A file that is already open keeps
reading its own bytes whatever happens to its name, so once opened it stays right.

Inode numbers are only reused after a file is unlinked and no longer open; a region is used
within the delete delay (a minute by default) of being read, so a match is the same file.
"""
from __future__ import annotations

import os
from typing import BinaryIO

DELETED_SUFFIX = ".deleted"  # Kafka's LogFileUtils.DELETED_FILE_SUFFIX


def open_region_file(path: str, inode: int) -> BinaryIO | None:
    """The file `path` names if its inode is `inode`, else `<path>.deleted` if that is it.

    Returns an unbuffered binary file (the caller closes it), or None when neither is the
    file (it was deleted for good). `inode` 0 means unknown: `path` is taken as it is.
    """
    for candidate in (path, path + DELETED_SUFFIX) if inode else (path,):
        try:
            f = open(candidate, "rb", buffering=0)
        except FileNotFoundError:
            continue
        if not inode or os.fstat(f.fileno()).st_ino == inode:
            return f
        f.close()
    return None


def read_region(path: str, position: int, length: int, inode: int = 0) -> bytes:
    """The bytes of a region, found by identity; FileNotFoundError when its file is gone."""
    f = open_region_file(path, inode)
    if f is None:
        raise FileNotFoundError(f"segment file {path} (inode {inode}) no longer exists")
    with f:
        return os.pread(f.fileno(), length, position)
