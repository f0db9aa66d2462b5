"""The replica's end of the data socket: it listens for one served partition and answers frames.

`data_channel.py` is the protocol both ends share (ops, framing, encoders and decoders, the
`EXCHANGES` table); `net/data_plane.py` is the front end's end. `_HANDLERS` below gives the
replica's side of each op of that table. Appends on one connection apply in arrival order and
are answered at once, or with acks=all once replicated; reads are answered at once, or park in
`parked_reads.py` until data comes (a follow read parks again once answered, see
`data_channel`).
"""
from __future__ import annotations

import asyncio
import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from rafka.common.errors import ErrorCode
from rafka.common.frames import FramedProtocol
from rafka.partition_worker import data_channel as dc
from rafka.partition_worker.data_channel import Op
from rafka.partition_worker.held_writes import HeldWrites
from rafka.partition_worker.messages import FetchIsolation, FetchResult, ProduceResult
from rafka.partition_worker.parked_reads import Follow, ParkedReads
from rafka.partition_worker.purgatory import is_final

if TYPE_CHECKING:
    from rafka.partition_worker.served_partition import ServedPartition


class DataServer:
    """The data socket of one opening of a replica process, and the reads parked on it.

    Its connections belong to this opening: once it closes (the partition rested, its topic
    was deleted, the broker stops), the reads still parked close their connections unanswered
    and later frames close theirs (the front end takes either as NOT_LEADER_OR_FOLLOWER), so
    none ever reaches the partition the process may serve next."""

    def __init__(self, partition: ServedPartition, socket_path: str | None) -> None:
        self._partition = partition
        self.socket_path = socket_path
        self._server: asyncio.base_events.Server | None = None
        self.parked = ParkedReads(self.answer_read)

    async def listen(self) -> None:
        """Listen on the socket path, replacing a stale socket file there (nothing without a
        path, or when listening already)."""
        if not self.socket_path or self._server is not None:
            return
        Path(self.socket_path).parent.mkdir(parents=True, exist_ok=True)
        try:
            os.unlink(self.socket_path)
        except FileNotFoundError:
            pass
        loop = asyncio.get_running_loop()
        self._server = await loop.create_unix_server(self.new_connection, path=self.socket_path)

    def close(self) -> None:
        """Close the parked reads' connections, stop listening and remove the socket file."""
        self.parked.close()
        if self._server is not None:
            self._server.close()
            self._server = None
            try:
                os.unlink(self.socket_path)
            except (FileNotFoundError, TypeError):
                pass

    def new_connection(self) -> FramedProtocol:
        """One front end's connection: appends apply in arrival order, reads may park."""
        # Appends finish before on_frame returns and reads decode at once: the buffer can be shared.
        # A read with data (most of them) is answered right here too: a task per read costs
        # about as much as the read itself.
        protocol = FramedProtocol(dc.FRAME_HEAD.size, dc.frame_body_length, lambda head, body: None,
                                  reuse_buffer=True)
        connection = _Connection(self, self._partition, protocol)
        parked = self.parked
        protocol.closed.add_done_callback(lambda _: parked.drop_connection(connection.id))
        protocol.on_frame = connection.on_frame
        if self.socket_path is not None:
            asyncio.get_running_loop().call_soon(_widen, protocol)
        return protocol

    def answer_read(self, transport: asyncio.BaseTransport | None, request_id: int, result: FetchResult,
                    follow: Follow | None) -> None:
        """A read's answer on the connection it came from, while that is open; with `follow`,
        and data up to the high watermark, its follow read parks at once at the next offset
        (`data_channel`'s follow reads), and the answer says so."""
        if transport is None or transport.is_closing():
            return
        followed = follow is not None and dc.follows(result, follow.isolation)
        transport.write(dc.frame(request_id, dc.encode_fetch_result(result, followed)))
        if followed:
            offset, max_bytes, read_now = result.next_offset, follow.max_bytes, self._partition.read_now
            isolation = follow.isolation
            waiting = FetchResult(ErrorCode.NONE, result.high_watermark, result.last_stable_offset,
                                  result.log_start_offset,
                                  aborted_transactions=() if isolation is FetchIsolation.TXN_COMMITTED else None)
            self.parked.park(follow.connection, transport, follow.follow_id,
                             lambda: read_now(offset, max_bytes, isolation), waiting, follow.max_wait_ms, follow)


class _Connection:
    """One front end's connection: its frames, handled in arrival order by `_HANDLERS`."""

    __slots__ = ("id", "_server", "_partition", "_protocol", "_out")

    def __init__(self, server: DataServer, partition: ServedPartition, protocol: FramedProtocol) -> None:
        self.id = id(protocol)   # (the key of its parked reads)
        self._server = server
        self._partition = partition
        self._protocol = protocol
        self._out: HeldWrites | None = None   # this connection's writes (once connected)

    def on_frame(self, head: bytes, body: bytearray) -> None:
        if self._partition.closed.is_set():   # the front end takes the closed connection as NOT_LEADER
            self._protocol.transport.close()
            return
        out = self._out
        if out is None:
            out = self._out = HeldWrites(self._protocol.transport)
        _, request_id = dc.FRAME_HEAD.unpack(head)
        view = memoryview(body)
        out.hold()
        try:
            handler = _HANDLERS.get(view[0])
            if handler is None:
                raise ValueError(f"unknown data-plane op {view[0]}")
            handler(self, request_id, view)
        except Exception:  # noqa: BLE001 - a bad frame closes this connection only
            self._partition.logger.exception("closing a data connection after a malformed frame")
            out.close()
        finally:
            out.release()

    def append(self, request_id: int, view: memoryview) -> None:
        acks, timeout_ms, record_sets = dc.decode_append(view)
        partition = self._partition
        self._answer_appended(request_id, partition.append(record_sets, acks), acks, timeout_ms)

    def write_txn_marker(self, request_id: int, view: memoryview) -> None:
        """A transaction coordinator's marker: appended as the leader, answered with acks=all."""
        producer_id, producer_epoch, coordinator_epoch, commit, timeout_ms = dc.decode_txn_marker(view)
        result = self._partition.write_txn_marker(producer_id, producer_epoch, coordinator_epoch, commit)
        self._answer_appended(request_id, [result], -1, timeout_ms)

    def _answer_appended(self, request_id: int, results: list[ProduceResult], acks: int, timeout_ms: int) -> None:
        """Answer an append now, or with acks=all once the followers have it."""
        partition = self._partition
        required = partition.log.log_end_offset
        if acks == -1 and partition.awaits_replication(results, required):
            asyncio.ensure_future(self._answer_after_replication(request_id, results, required, timeout_ms))
        else:
            self._out.write(dc.frame(request_id, dc.encode_produce_results(results)))

    async def _answer_after_replication(self, request_id: int, results: list[ProduceResult], required_offset: int,
                                        timeout_ms: int) -> None:
        """Answer an acks=all append once the high watermark passes `required_offset`, with
        NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below min.insync.replicas meanwhile,
        or REQUEST_TIMED_OUT after `timeout_ms` (see `Purgatory.await_replication`)."""
        outcome = await self._partition.await_replication(required_offset, timeout_ms)
        answered = [replace(r, error=outcome) if r.error is ErrorCode.NONE and outcome is not ErrorCode.NONE else r
                    for r in results]
        transport = self._protocol.transport
        if transport is not None and not transport.is_closing():
            transport.write(dc.frame(request_id, dc.encode_produce_results(answered)))

    def read(self, request_id: int, view: memoryview) -> None:
        """A consumer's read (READ, READ_COMMITTED), which may follow (`data_channel`), or the
        broker's own (READ_LOG_END)."""
        offset, max_bytes, max_wait_ms, isolation, follow_id = dc.decode_read(view)
        read_now = self._partition.read_now
        follow = None
        if follow_id and max_wait_ms > 0 and isolation is not FetchIsolation.LOG_END:
            follow = Follow(self.id, follow_id, max_bytes, max_wait_ms, isolation)
        self._answer_or_park(request_id, read_now(offset, max_bytes, isolation), max_wait_ms,
                             lambda: read_now(offset, max_bytes, isolation), follow)

    def replica_read(self, request_id: int, view: memoryview) -> None:
        """A follower's fetch."""
        follower, epoch, offset, max_bytes, max_wait_ms = dc.decode_replica_read(view)
        replica_read = self._partition.replica_read
        self._answer_or_park(request_id, replica_read(follower, epoch, offset, max_bytes), max_wait_ms,
                             lambda: replica_read(follower, epoch, offset, max_bytes), None)

    def _answer_or_park(self, request_id: int, result: FetchResult, max_wait_ms: int,
                        read_again: Callable[[], FetchResult], follow: Follow | None) -> None:
        if is_final(result, max_wait_ms):
            self._server.answer_read(self._out, request_id, result, follow)
        else:  # nothing to read yet: park until an append or the deadline
            self._server.parked.park(self.id, self._out, request_id, read_again, result, max_wait_ms, follow)

    def release(self, request_id: int, view: memoryview) -> None:
        self._server.parked.release(self.id, dc.decode_release(view))

    def list_offset(self, request_id: int, view: memoryview) -> None:
        lookup = self._partition.list_offset(*dc.decode_list_offset(view))
        self._out.write(dc.frame(request_id, dc.encode_offset_lookup(lookup)))

    def delete_records(self, request_id: int, view: memoryview) -> None:
        deleted = self._partition.delete_records_now(dc.decode_delete_records(view))
        self._out.write(dc.frame(request_id, dc.encode_deleted(deleted)))

    def follower_append(self, request_id: int, view: memoryview) -> None:
        hw, log_start, records = dc.decode_follower_append(view)
        answer = dc.encode_follower_result(self._partition.append_as_follower(records, hw, log_start))
        self._out.write(dc.frame(request_id, answer))


# The replica's side of each op of `data_channel.EXCHANGES`.
_HANDLERS: dict[int, Callable[[_Connection, int, memoryview], None]] = {
    Op.APPEND: _Connection.append,
    Op.READ: _Connection.read,
    Op.READ_LOG_END: _Connection.read,
    Op.READ_COMMITTED: _Connection.read,
    Op.WRITE_TXN_MARKER: _Connection.write_txn_marker,
    Op.REPLICA_READ: _Connection.replica_read,
    Op.FOLLOWER_APPEND: _Connection.follower_append,
    Op.RELEASE: _Connection.release,
    Op.LIST_OFFSET: _Connection.list_offset,
    Op.DELETE_RECORDS: _Connection.delete_records,
}


def _widen(protocol: FramedProtocol) -> None:
    if protocol.transport is not None:
        dc.widen_socket_buffers(protocol.transport.get_extra_info("socket"))
