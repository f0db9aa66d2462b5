"""`OffsetMap`: the log cleaner's bounded map from key hash to the latest offset of that key.

As Kafka's `SkimpyOffsetMap`: each entry is the 16-byte MD5 of a key followed by an 8-byte
offset (24 bytes), kept in one preallocated `bytearray` of `memory_bytes // 24` slots with
open addressing (linear probing from the first 8 bytes of the hash). The cleaner fills it
only up to a load factor of 0.9 (`log.cleaner.io.buffer.load.factor`), so probes stay short.
Two keys with the same MD5 would share an entry, as in Kafka (a risk Kafka accepts).

Entries are never removed one by one, except by `rollback`, which undoes the most recent
`put`s in reverse order: the cleaner maps whole segments and takes back a segment that did
not fit (see `cleaner.py`). Not thread-safe; one cleaning owns one map.
"""
from __future__ import annotations

import hashlib
import struct
from array import array

HASH_SIZE = 16                    # MD5, as Kafka's default `log.cleaner` hash algorithm
ENTRY_SIZE = HASH_SIZE + 8        # hash + int64 offset
LOAD_FACTOR = 0.9                 # Kafka's log.cleaner.io.buffer.load.factor default
_OFFSET = struct.Struct(">q")
_EMPTY = bytes(ENTRY_SIZE)


def key_hash(key: bytes) -> bytes:
    """The 16-byte MD5 digest the map stores for `key`."""
    return hashlib.md5(key).digest()


class OffsetMap:
    """key hash -> offset, bounded by a byte budget (Kafka's SkimpyOffsetMap)."""

    def __init__(self, memory_bytes: int) -> None:
        self.slots = max(0, memory_bytes // ENTRY_SIZE)
        self._bytes = bytearray(self.slots * ENTRY_SIZE)
        self.size = 0
        self.latest_offset = -1
        self._journal_positions = array("q")
        self._journal_old_offsets = array("q")  # -1: the slot was empty before

    @property
    def max_entries(self) -> int:
        """Entries the cleaner lets in: slots x load factor (Kafka's maxDesiredMapSize)."""
        return int(self.slots * LOAD_FACTOR)

    @property
    def utilization(self) -> float:
        return self.size / self.slots if self.slots else 0.0

    def clear(self) -> None:
        self._bytes[:] = bytes(len(self._bytes))
        self.size = 0
        self.latest_offset = -1
        self.commit()

    def _slot_of(self, digest: bytes) -> tuple[int, bool]:
        """(byte position of the entry for `digest` or of the empty slot it would take, found)."""
        data = self._bytes
        slot = int.from_bytes(digest[:8], "big") % self.slots
        for _ in range(self.slots):
            pos = slot * ENTRY_SIZE
            if data[pos:pos + HASH_SIZE] == digest:
                return pos, True
            if data[pos:pos + ENTRY_SIZE] == _EMPTY:
                return pos, False
            slot = slot + 1 if slot + 1 < self.slots else 0
        raise OverflowError("offset map has no free slot")

    def put(self, key: bytes, offset: int) -> bool:
        """Map `key` to `offset` (a later offset of the same key replaces the earlier one).

        False, changing nothing, when `key` is new and the map already holds `max_entries`.
        """
        if not self.slots:
            return False
        digest = key_hash(key)
        pos, found = self._slot_of(digest)
        if found:
            old = _OFFSET.unpack_from(self._bytes, pos + HASH_SIZE)[0]
        elif self.size >= self.max_entries:
            return False
        else:
            old = -1
            self._bytes[pos:pos + HASH_SIZE] = digest
            self.size += 1
        _OFFSET.pack_into(self._bytes, pos + HASH_SIZE, offset)
        self._journal_positions.append(pos)
        self._journal_old_offsets.append(old)
        return True

    def get(self, key: bytes) -> int:
        """The offset mapped for `key`, or -1 when it is not in the map."""
        if not self.slots:
            return -1
        pos, found = self._slot_of(key_hash(key))
        return _OFFSET.unpack_from(self._bytes, pos + HASH_SIZE)[0] if found else -1

    def commit(self) -> None:
        """Forget the undo journal: the `put`s so far can no longer be rolled back."""
        self._journal_positions = array("q")
        self._journal_old_offsets = array("q")

    def rollback(self) -> None:
        """Undo every `put` since the last `commit`/`clear`, newest first.

        Undoing the newest inserts first restores the exact earlier table: no entry still in
        it was placed after (and so probed past) a slot that is emptied here.
        """
        for pos, old in zip(reversed(self._journal_positions), reversed(self._journal_old_offsets)):
            if old < 0:
                self._bytes[pos:pos + ENTRY_SIZE] = _EMPTY
                self.size -= 1
            else:
                _OFFSET.pack_into(self._bytes, pos + HASH_SIZE, old)
        self.commit()
