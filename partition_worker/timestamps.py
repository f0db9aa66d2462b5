"""Message timestamps as Kafka 3.9's LogValidator treats them.

- CreateTime (the default): batches are stored as the client sent them; when
  `message.timestamp.before.max.ms` or `.after.max.ms` is set, every record's timestamp must
  lie within [now - before, now + after], or the append is refused with INVALID_TIMESTAMP.
- LogAppendTime: the broker stamps each batch in place before writing it: the timestamp-type
  attribute bit is set, maxTimestamp becomes the append time, and the CRC is recomputed
  (DefaultRecordBatch.setMaxTimestamp). Readers then take maxTimestamp as every record's
  timestamp; baseTimestamp and the record deltas are left as they were.
"""
from __future__ import annotations

import struct

import crc32c as _crc32c

from rafka.common.config import LONG_MAX, LogConfig
from rafka.common.errors import InvalidTimestampError
from rafka.partition_worker.record_batch import (
    ATTRIBUTES_OFFSET, CRC_OFFSET, NO_TIMESTAMP, TIMESTAMP_TYPE_MASK, BatchHeader, decode_records,
)

MAX_TIMESTAMP_OFFSET = 35
_INT16 = struct.Struct(">h")
_INT64 = struct.Struct(">q")
_UINT32 = struct.Struct(">I")


def set_log_append_time(buf: memoryview, h: BatchHeader, now_ms: int) -> None:
    """Stamp the batch at `h.position` with LogAppendTime `now_ms` and recompute its CRC."""
    pos = h.position
    _INT16.pack_into(buf, pos + ATTRIBUTES_OFFSET, h.attributes | TIMESTAMP_TYPE_MASK)
    _INT64.pack_into(buf, pos + MAX_TIMESTAMP_OFFSET, now_ms)
    _UINT32.pack_into(buf, pos + CRC_OFFSET, _crc32c.crc32c(buf[pos + ATTRIBUTES_OFFSET:pos + h.size]))


def checks_create_time(config: LogConfig) -> bool:
    """Whether CreateTime timestamps must be checked (not with both bounds at their Long.MAX default)."""
    return not config.log_append_time and (config.message_timestamp_before_max_ms != LONG_MAX
                                           or config.message_timestamp_after_max_ms != LONG_MAX)


INVALID_TIMESTAMP_MESSAGE = "One or more records have been rejected due to invalid timestamp"


def check_create_times(buf: memoryview, h: BatchHeader, config: LogConfig, now_ms: int) -> None:
    """InvalidTimestampError unless every record's timestamp is within the configured bounds.

    As Kafka's LogValidator: every record of the batch is checked, each refused one becomes a
    record error (its index in the batch and why), and the error names them all.
    """
    low = now_ms - config.message_timestamp_before_max_ms
    high = now_ms + config.message_timestamp_after_max_ms
    _, records = decode_records(buf, h.position, verify_crc=False)
    record_errors = tuple(
        (index, f"Timestamp {r.timestamp} of message with offset {r.offset} is out of range. "
                f"The timestamp should be within [{low}, {high}]")
        for index, r in enumerate(records) if r.timestamp != NO_TIMESTAMP and not low <= r.timestamp <= high)
    if record_errors:
        raise InvalidTimestampError(INVALID_TIMESTAMP_MESSAGE, record_errors)
