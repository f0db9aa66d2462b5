"""Child process of the process-crash tests: appends to a PartitionLog until it is killed.

Run as `python crash_child.py DIR ROUND SEED FLUSH_MESSAGES SEGMENT_BYTES RECOVERY_POINT`
(RECOVERY_POINT `-` for none). It opens the log (recovering it after the previous kill), then
appends batches of random sizes forever. After each append *returns* it writes one line to
stdout with one `os.write` (so a line is whole or absent):
`<batch index> <base offset> <last offset> <recovery point>`. The first line, `open <log end>
<recovery point>`, comes after the open.

Record contents are a pure function of (round, batch index, record index), so the parent can
check every record it finds without being told about it (`expected_value`), including a batch
whose append the kill interrupted.
"""
from __future__ import annotations

import hashlib
import os
import random
import sys

VALUE_PREFIX = b"crash:"


def batch_size(round_no: int, batch_index: int, seed: int) -> tuple[int, int]:
    """(records in the batch, bytes of each value): random but reproducible."""
    rng = random.Random(f"{seed}:{round_no}:{batch_index}")
    return rng.randint(1, 12), rng.choice((1, 30, 200, 900))


def expected_value(round_no: int, batch_index: int, record_index: int, size: int) -> bytes:
    """The value of record `record_index` of a batch: a readable prefix, then pseudo-random bytes."""
    head = b"%s%d:%d:%d:" % (VALUE_PREFIX, round_no, batch_index, record_index)
    body = b""
    counter = 0
    while len(body) < size:
        body += hashlib.sha256(head + counter.to_bytes(4, "big")).digest()
        counter += 1
    return head + body[:size]


def parse_value(value: bytes) -> tuple[int, int, int]:
    """(round, batch index, record index) from a value written by `expected_value`."""
    fields = value[len(VALUE_PREFIX):].split(b":", 3)
    return int(fields[0]), int(fields[1]), int(fields[2])


def make_batch(round_no: int, batch_index: int, seed: int) -> bytearray:
    from rafka.partition_worker.record_batch import Record, encode_batch

    count, size = batch_size(round_no, batch_index, seed)
    records = [Record(j, 1_000 + batch_index, b"k%d" % j, expected_value(round_no, batch_index, j, size))
               for j in range(count)]
    return bytearray(encode_batch(records))


def main(argv: list[str]) -> None:
    from rafka.common.config import LogConfig
    from rafka.partition_worker.log import PartitionLog

    directory, round_no, seed, flush_messages, segment_bytes, rp = argv
    config = LogConfig(segment_bytes=int(segment_bytes), index_interval_bytes=256,
                       flush_messages=int(flush_messages))
    log = PartitionLog.open(directory, config, recovery_point=None if rp == "-" else int(rp))
    os.write(1, b"open %d %d\n" % (log.log_end_offset, log.recovery_point))
    i = 0
    while True:
        info = log.append(make_batch(int(round_no), i, int(seed)), leader_epoch=int(round_no),
                          max_batch_bytes=1 << 20)
        os.write(1, b"%d %d %d %d\n" % (i, info.base_offset, info.last_offset, log.recovery_point))
        i += 1


if __name__ == "__main__":
    main(sys.argv[1:])
