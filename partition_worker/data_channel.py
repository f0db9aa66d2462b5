"""The wire format of the data plane between a front end and the replicas on its node.

A plain Ray actor call costs 1.4–2.2 ms and an argument over 100 KiB goes through the
object store, so produce batches and fetch answers travel instead over a Unix domain
socket that each replica listens on. Ray still carries all control (creation, roles,
metadata); the socket carries only appends and reads.

Frames, both directions: `u32 length | u32 request id | body`. Requests start with an
op byte. Answers carry the id of their request and may come out of order (a parked
read must not hold up an append), so the caller matches them by id. Appends on one
connection are applied in the order they were sent. A RELEASE ends the wait of a parked
read at once; it has no answer of its own, and a read already answered ignores it.

A read_committed consumer's read (READ_COMMITTED) stops at the last stable offset and its
answer lists the aborted transactions among its records; it follows as a read_uncommitted one
does, up to the last stable offset. A consumer's answer says whether its committed window is
stable too (below the LSO, no aborted transaction in it): only then may the front end serve a
read_committed read from it. A transaction coordinator's COMMIT or ABORT marker
(WRITE_TXN_MARKER) is an append like any other, in order with them.

A consumer's read may name a follow id: answered with data up to the high watermark (the
consumer has caught up) other than by a RELEASE, the replica then parks the same read at the
offset after that data under the follow id, and says so in the answer (`followed`). The next
fetch of a consumer at the end of a log is then already waiting at the replica: each record
costs a read request and a turn of the replica's loop less. A follow read follows itself
(under the same id) the same way.

This module is the protocol, for both ends: the front end's side is `net/data_plane.py`, the
replica's `data_server.py`. Pure functions only: no sockets.
"""
from __future__ import annotations

import hashlib
import os
import struct
import tempfile
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Callable

from rafka.common.errors import ErrorCode
from rafka.partition_worker.messages import (AbortedTransaction, DeleteRecordsResult, FetchIsolation, FetchResult,
                                             FollowerAppendResult, OffsetLookup, ProduceResult, Region)


class Op:
    """A request's first byte: what the replica is asked (`EXCHANGES`, at the end, gives each
    op's encoders and decoders on both sides). Plain ints, not an enum: they are packed into
    and compared with every frame."""

    APPEND = 1
    READ = 2
    REPLICA_READ = 3     # a follower's fetch, served by the leader up to its log end
    FOLLOWER_APPEND = 4  # batches fetched from the leader, appended by a follower as they are
    RELEASE = 5          # end the wait of a parked read now (it answers under its own id); no answer
    READ_LOG_END = 6     # the broker's own read of a partition it leads, up to the log end (see encode_read)
    LIST_OFFSET = 7      # ListOffsets: on this socket, so it keeps its order with the requests before it
    DELETE_RECORDS = 8   # DeleteRecords: likewise (a ListOffsets right after it must see it)
    READ_COMMITTED = 9   # a read_committed consumer's read, up to the last stable offset (KIP-98)
    WRITE_TXN_MARKER = 10  # a transaction coordinator's COMMIT or ABORT marker, appended as the leader


FRAME_HEAD = struct.Struct(">II")            # length (of what follows), request id
_APPEND_HEAD = struct.Struct(">BbII")        # op, acks, timeout ms (acks=all), number of record sets
_U32 = struct.Struct(">I")
_RELEASE = struct.Struct(">BI")              # op, request id of the parked read
_READ = struct.Struct(">BqiII")              # op, fetch offset, max bytes, max wait ms, follow id (0: none)
_REPLICA_READ = struct.Struct(">BiiqiI")     # op, follower broker, its leader epoch, fetch offset, max bytes,
#                                              max wait ms
_PRODUCE_RESULT = struct.Struct(">hqqqH")    # error, base offset, append time, log start, message length
_RECORD_ERRORS = struct.Struct(">H")         # count of record errors, after the message
_RECORD_ERROR = struct.Struct(">iH")         # batch index, message length
_LIST_OFFSET = struct.Struct(">Bqb")         # op, timestamp (or LATEST -1, EARLIEST -2, ...), isolation level
_OFFSET_LOOKUP = struct.Struct(">hqqi")      # error, timestamp, offset, leader epoch
_DELETE_RECORDS = struct.Struct(">Bq")      # op, offset (-1: the high watermark)
_DELETED = struct.Struct(">hq")              # error, low watermark
_FOLLOWER_APPEND = struct.Struct(">Bqq")    # op, leader's high watermark, leader's log start offset
_FOLLOWER_RESULT = struct.Struct(">hqq")    # error, log end offset, high watermark
_FETCH_HEAD = struct.Struct(">hqqqqqHB")     # error, high watermark, last stable, log start, next offset,
#                                              committed end, regions, followed (see the module docstring)
_REGION = struct.Struct(">HqIQ")             # path length, position, length, inode
_TAIL = struct.Struct(">Bi")                  # after the regions: stable window, aborted transactions (-1: none)
_ABORTED = struct.Struct(">qq")               # producer id, first offset
_TXN_MARKER = struct.Struct(">BqhiBI")        # op, producer id, producer epoch, coordinator epoch, commit,
#                                               timeout ms (the wait for the followers: markers are acks=all)
_READ_OPS = {FetchIsolation.HIGH_WATERMARK: Op.READ, FetchIsolation.TXN_COMMITTED: Op.READ_COMMITTED,
             FetchIsolation.LOG_END: Op.READ_LOG_END}
_ISOLATION_OF_OP = {op: isolation for isolation, op in _READ_OPS.items()}

# Unix socket paths are limited to 107 bytes, so they are named by a hash.
SOCKET_DIR = Path(tempfile.gettempdir()) / f"rafka-{os.getuid()}"


# Produce requests carry megabytes; the default Unix socket buffers (~200 KiB) would make
# asyncio buffer and re-copy each large write many times before the kernel takes it.
SOCKET_BUFFER_BYTES = 4 << 20


def widen_socket_buffers(sock) -> None:
    """Give a data-plane socket buffers large enough for whole produce requests."""
    import socket

    if sock is None:
        return
    for option in (socket.SO_SNDBUF, socket.SO_RCVBUF):
        try:
            sock.setsockopt(socket.SOL_SOCKET, option, SOCKET_BUFFER_BYTES)
        except OSError:
            pass


def socket_path(namespace: str, name: str, log_dir: str = "", topic_id: object = None) -> str:
    """The data socket of the replica actor `name`: named by a hash (a Unix socket path has at
    most 107 bytes) of the Ray namespace, the actor name, the replica's log dir and its topic
    id. Actor names repeat from one cluster to the next, so the log dir (never shared by two
    live clusters) keeps two clusters on one machine in the same namespace (two `rafka up`, two
    test sessions) from binding, connecting to and unlinking each other's sockets, and the
    topic id keeps a topic deleted and created again from meeting its old replica's socket."""
    key = f"{namespace}/{name}/{os.path.abspath(log_dir) if log_dir else ''}/{topic_id or ''}"
    digest = hashlib.sha1(key.encode()).hexdigest()[:20]
    return str(SOCKET_DIR / f"{digest}.sock")


# A data-plane frame never exceeds a produce request (Kafka's socket.request.max.bytes).
MAX_FRAME_BYTES = 104857600 + 4096


def frame_body_length(head: bytes) -> int:
    """Body bytes after a frame head (the request id is part of the length)."""
    length, _ = FRAME_HEAD.unpack(head)
    if not 4 <= length <= MAX_FRAME_BYTES:
        from rafka.common.frames import FrameError
        raise FrameError(f"data-plane frame length {length} out of range")
    return length - 4


def frame(request_id: int, body: bytes | bytearray) -> bytes:
    return FRAME_HEAD.pack(len(body) + 4, request_id) + body


def encode_append(record_sets: list, acks: int, timeout_ms: int = 0) -> list:
    """Parts (to send with writelines) of an APPEND of several produce requests' records;
    with acks=all (-1), `timeout_ms` bounds the wait for the followers."""
    parts: list = [_APPEND_HEAD.pack(Op.APPEND, acks, max(0, min(timeout_ms, 0xFFFFFFFF)), len(record_sets))]
    for records in record_sets:
        parts.append(_U32.pack(len(records)))
        parts.append(records)
    return parts


def decode_append(body: memoryview) -> tuple[int, int, list[memoryview]]:
    """(acks, timeout ms, record sets); raises ValueError on a malformed body."""
    _, acks, timeout_ms, count = _APPEND_HEAD.unpack_from(body, 0)
    pos, sets = _APPEND_HEAD.size, []
    for _ in range(count):
        (size,) = _U32.unpack_from(body, pos)
        pos += 4
        if pos + size > len(body):
            raise ValueError("record set runs past the frame")
        sets.append(body[pos:pos + size])
        pos += size
    return acks, timeout_ms, sets


def encode_produce_results(results: list[ProduceResult]) -> bytes:
    out = bytearray(_U32.pack(len(results)))
    for r in results:
        message = (r.error_message or "").encode()[:65535]
        out += _PRODUCE_RESULT.pack(r.error, r.base_offset, r.log_append_time_ms, r.log_start_offset, len(message))
        out += message
        out += _RECORD_ERRORS.pack(min(len(r.record_errors), 65535))
        for index, text in r.record_errors[:65535]:
            encoded = text.encode()[:65535]
            out += _RECORD_ERROR.pack(index, len(encoded)) + encoded
    return bytes(out)


def decode_produce_results(body: memoryview) -> list[ProduceResult]:
    (count,) = _U32.unpack_from(body, 0)
    pos, results = 4, []
    for _ in range(count):
        error, base, append_time, start, size = _PRODUCE_RESULT.unpack_from(body, pos)
        pos += _PRODUCE_RESULT.size
        message = bytes(body[pos:pos + size]).decode() if size else None
        pos += size
        (count,) = _RECORD_ERRORS.unpack_from(body, pos)
        pos += _RECORD_ERRORS.size
        record_errors = []
        for _ in range(count):
            index, size = _RECORD_ERROR.unpack_from(body, pos)
            pos += _RECORD_ERROR.size
            record_errors.append((index, bytes(body[pos:pos + size]).decode()))
            pos += size
        results.append(ProduceResult(ErrorCode(error), base, append_time, start, message, tuple(record_errors)))
    return results


def encode_read(fetch_offset: int, max_bytes: int, max_wait_ms: int,
                isolation: FetchIsolation = FetchIsolation.HIGH_WATERMARK, follow_id: int = 0) -> bytes:
    """A consumer's read up to the high watermark (read_uncommitted) or the last stable offset
    (read_committed, TXN_COMMITTED), or up to the leader's log end (LOG_END): the broker's own
    read of a partition it has come to lead, as Kafka's group coordinator loads
    `__consumer_offsets`. A consumer's read may name a `follow_id` (see the module docstring)."""
    return _READ.pack(_READ_OPS[isolation], fetch_offset, max_bytes, max(0, max_wait_ms), follow_id)


def decode_read(body: memoryview) -> tuple[int, int, int, FetchIsolation, int]:
    """(fetch offset, max bytes, max wait ms, isolation, follow id)."""
    op, offset, max_bytes, max_wait_ms, follow_id = _READ.unpack_from(body, 0)
    return offset, max_bytes, max_wait_ms, _ISOLATION_OF_OP[op], follow_id


def encode_list_offset(timestamp: int, isolation_level: int = 0) -> bytes:
    """A ListOffsets lookup (`isolation_level` 1: read_committed, whose latest offset is the
    last stable offset). It goes over the data socket, not as an actor call, so that it sees
    every append the front end sent before it: a consumer resetting to the latest offset
    while a producer writes must not be told an offset past records it never read."""
    return _LIST_OFFSET.pack(Op.LIST_OFFSET, timestamp, isolation_level)


def decode_list_offset(body: memoryview) -> tuple[int, int]:
    """(timestamp, isolation level)."""
    _, timestamp, isolation_level = _LIST_OFFSET.unpack_from(body, 0)
    return timestamp, isolation_level


def encode_txn_marker(producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool,
                      timeout_ms: int) -> bytes:
    """A transaction coordinator's marker for `producer_id`'s transaction (COMMIT when
    `commit`, else ABORT), answered once the followers have it or `timeout_ms` passed (Kafka
    appends markers with acks=all)."""
    return _TXN_MARKER.pack(Op.WRITE_TXN_MARKER, producer_id, producer_epoch, coordinator_epoch, commit,
                            max(0, min(timeout_ms, 0xFFFFFFFF)))


def decode_txn_marker(body: memoryview) -> tuple[int, int, int, bool, int]:
    """(producer id, producer epoch, coordinator epoch, commit, timeout ms)."""
    _, producer_id, producer_epoch, coordinator_epoch, commit, timeout_ms = _TXN_MARKER.unpack_from(body, 0)
    return producer_id, producer_epoch, coordinator_epoch, bool(commit), timeout_ms


def encode_offset_lookup(lookup: OffsetLookup) -> bytes:
    return _OFFSET_LOOKUP.pack(lookup.error, lookup.timestamp, lookup.offset, lookup.leader_epoch)


def decode_offset_lookup(body: memoryview) -> OffsetLookup:
    error, timestamp, offset, epoch = _OFFSET_LOOKUP.unpack_from(body, 0)
    return OffsetLookup(ErrorCode(error), timestamp, offset, epoch)


def encode_delete_records(offset: int) -> bytes:
    """A DeleteRecords up to `offset`, over the data socket for the same reason as a lookup:
    an admin client sends DeleteRecords and then ListOffsets(earliest) without waiting."""
    return _DELETE_RECORDS.pack(Op.DELETE_RECORDS, offset)


def decode_delete_records(body: memoryview) -> int:
    return _DELETE_RECORDS.unpack_from(body, 0)[1]


def encode_deleted(result: DeleteRecordsResult) -> bytes:
    return _DELETED.pack(result.error, result.low_watermark)


def decode_deleted(body: memoryview) -> DeleteRecordsResult:
    error, low_watermark = _DELETED.unpack_from(body, 0)
    return DeleteRecordsResult(ErrorCode(error), low_watermark)


def encode_release(request_id: int) -> bytes:
    """Ask the replica to answer the parked read `request_id` now, with what it has: a fetch
    over several partitions is answered once one of them has data (Kafka's DelayedFetch),
    and the reads of the others must not stay parked behind it."""
    return _RELEASE.pack(Op.RELEASE, request_id)


def decode_release(body: memoryview) -> int:
    _, request_id = _RELEASE.unpack_from(body, 0)
    return request_id


def encode_replica_read(follower: int, leader_epoch: int, fetch_offset: int, max_bytes: int,
                        max_wait_ms: int) -> bytes:
    """A follower's fetch; `leader_epoch` is the epoch the follower knows (-1: not checked)."""
    return _REPLICA_READ.pack(Op.REPLICA_READ, follower, leader_epoch, fetch_offset, max_bytes, max(0, max_wait_ms))


def decode_replica_read(body: memoryview) -> tuple[int, int, int, int, int]:
    """(follower, leader epoch, fetch offset, max bytes, max wait ms)."""
    _, follower, epoch, offset, max_bytes, max_wait_ms = _REPLICA_READ.unpack_from(body, 0)
    return follower, epoch, offset, max_bytes, max_wait_ms


def encode_follower_append(records: bytes | memoryview, leader_high_watermark: int,
                           leader_log_start_offset: int) -> list:
    """Parts of a FOLLOWER_APPEND: the leader's batches and the watermarks its fetch answer gave."""
    return [_FOLLOWER_APPEND.pack(Op.FOLLOWER_APPEND, leader_high_watermark, leader_log_start_offset), records]


def decode_follower_append(body: memoryview) -> tuple[int, int, memoryview]:
    """(leader high watermark, leader log start offset, records)."""
    _, hw, log_start = _FOLLOWER_APPEND.unpack_from(body, 0)
    return hw, log_start, body[_FOLLOWER_APPEND.size:]


def encode_follower_result(result: FollowerAppendResult) -> bytes:
    return _FOLLOWER_RESULT.pack(result.error, result.log_end_offset, result.high_watermark)


def decode_follower_result(body: memoryview) -> FollowerAppendResult:
    error, log_end, hw = _FOLLOWER_RESULT.unpack_from(body, 0)
    return FollowerAppendResult(ErrorCode(error), log_end, hw)


def encode_fetch_result(result: FetchResult, followed: bool = False) -> bytes:
    """A read's answer; `followed` says the replica parked its follow read (module docstring)."""
    out = bytearray(_FETCH_HEAD.pack(result.error, result.high_watermark, result.last_stable_offset,
                                     result.log_start_offset, result.next_offset, result.committed_end,
                                     len(result.regions), followed))
    for region in result.regions:
        path = region.path.encode()
        out += _REGION.pack(len(path), region.position, region.length, region.inode) + path
    aborted = result.aborted_transactions
    out += _TAIL.pack(result.stable_window, -1 if aborted is None else len(aborted))
    for txn in aborted or ():
        out += _ABORTED.pack(txn.producer_id, txn.first_offset)
    return bytes(out)


def follows(result: FetchResult, isolation: FetchIsolation = FetchIsolation.HIGH_WATERMARK) -> bool:
    """Whether a read with a follow id that is answered `result` (not by a RELEASE) is followed:
    it brought data, and up to the high watermark (read_committed: the last stable offset), so
    its consumer has caught up."""
    end = result.last_stable_offset if isolation is FetchIsolation.TXN_COMMITTED else result.high_watermark
    return bool(result.regions) and result.error is ErrorCode.NONE and result.next_offset >= end


def fetch_result_followed(body: memoryview) -> bool:
    """Whether the replica parked the follow read of the read this answers."""
    return bool(body[_FETCH_HEAD.size - 1])


def decode_fetch_result(body: memoryview) -> FetchResult:
    error, hw, lso, start, next_offset, committed_end, count, _ = _FETCH_HEAD.unpack_from(body, 0)
    pos, regions = _FETCH_HEAD.size, []
    for _ in range(count):
        size, position, length, inode = _REGION.unpack_from(body, pos)
        pos += _REGION.size
        regions.append(Region(bytes(body[pos:pos + size]).decode(), position, length, inode))
        pos += size
    stable_window, aborted_count = _TAIL.unpack_from(body, pos)
    aborted = None
    if aborted_count >= 0:
        pos += _TAIL.size
        aborted = tuple(AbortedTransaction(*_ABORTED.unpack_from(body, pos + i * _ABORTED.size))
                        for i in range(aborted_count))
    return FetchResult(ErrorCode(error), hw, lso, start, tuple(regions), next_offset, committed_end, aborted,
                       bool(stable_window))


@dataclass(frozen=True)
class Exchange:
    """One op from both ends of the socket: the front end encodes the request and decodes the
    answer (`net/data_plane.py`), the replica decodes the request and encodes the answer
    (`data_server.py`). A RELEASE has no answer."""

    encode_request: Callable[..., bytes | list]
    decode_request: Callable[[memoryview], Any]
    encode_answer: Callable[..., bytes] | None
    decode_answer: Callable[[memoryview], Any] | None


EXCHANGES: dict[int, Exchange] = {
    Op.APPEND: Exchange(encode_append, decode_append, encode_produce_results, decode_produce_results),
    Op.READ: Exchange(encode_read, decode_read, encode_fetch_result, decode_fetch_result),
    Op.READ_LOG_END: Exchange(partial(encode_read, isolation=FetchIsolation.LOG_END), decode_read,
                              encode_fetch_result, decode_fetch_result),
    Op.READ_COMMITTED: Exchange(partial(encode_read, isolation=FetchIsolation.TXN_COMMITTED), decode_read,
                                encode_fetch_result, decode_fetch_result),
    Op.REPLICA_READ: Exchange(encode_replica_read, decode_replica_read, encode_fetch_result, decode_fetch_result),
    Op.FOLLOWER_APPEND: Exchange(encode_follower_append, decode_follower_append, encode_follower_result,
                                 decode_follower_result),
    Op.RELEASE: Exchange(encode_release, decode_release, None, None),
    Op.LIST_OFFSET: Exchange(encode_list_offset, decode_list_offset, encode_offset_lookup, decode_offset_lookup),
    Op.DELETE_RECORDS: Exchange(encode_delete_records, decode_delete_records, encode_deleted, decode_deleted),
    Op.WRITE_TXN_MARKER: Exchange(encode_txn_marker, decode_txn_marker, encode_produce_results,
                                  decode_produce_results),
}
