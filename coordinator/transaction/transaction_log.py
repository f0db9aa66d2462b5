"""The records of `__transaction_state`, in Kafka 3.9's formats, and the partition of an id.

Mirrors Kafka 3.9's `TransactionLog` (core) and the JSON schemas of its transaction-coordinator
module, transcribed as `net/protocol/schema.py` tables that the protocol codec reads and
writes. Key and value start with an int16 version (`MessageUtil.toVersionPrefixedBytes`):

- `TransactionLogKey` v0: transactional_id (int16-length string).
- `TransactionLogValue` v0-v1 (v1 is v0 flexible, KIP-915): producer_id int64, producer_epoch
  int16, transaction_timeout_ms int32, transaction_status int8 (`TransactionState`),
  transaction_partitions nullable [topic string, partition_ids [int32]],
  transaction_last_update_timestamp_ms int64, transaction_start_timestamp_ms int64.
  Kafka 3.9 writes v1 only once `transaction.version` >= 1, a KRaft-only feature, so a
  ZooKeeper-mode 3.9 broker always writes v0, and so does rafka; both are read.
- Empty writes null partitions (Kafka refuses to write Empty with partitions); other states
  list them grouped by topic (sorted here; Kafka's order is its hash set's).
- A value's last producer id and epoch are not stored in 3.9 (they read back as -1).
- A null value (a tombstone) removes the transactional id (it expired).

Pure functions, no I/O. Like Kafka's readers, decoders ignore bytes after the last field.
"""
from __future__ import annotations

import struct
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from rafka.common.types import TopicPartition
from rafka.coordinator.group.offsets_topic import partition_for as _group_partition_for
from rafka.coordinator.transaction.transaction_metadata import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TransactionMetadata,
    TransactionState,
    TxnTransitMetadata,
)
from rafka.net.protocol import codec
from rafka.net.protocol.schema import ARRAY, INT8, INT16, INT32, INT64, STRING, DataSchema, Field
from rafka.partition_worker.record_batch import Record, decode_records, encode_batch, iter_batches

TRANSACTION_STATE_TOPIC = "__transaction_state"
KEY_VERSION = 0            # TransactionLogKey.HIGHEST_SUPPORTED_VERSION
VALUE_VERSION = 0          # what a ZooKeeper-mode 3.9 broker writes (transaction.version 0)
VALUE_VERSIONS = range(2)

_KEY = DataSchema("TransactionLogKey", (0, 0), None, (
    Field("transactional_id", STRING),
))

_VALUE = DataSchema("TransactionLogValue", (0, 1), 1, (
    Field("producer_id", INT64),
    Field("producer_epoch", INT16),
    Field("transaction_timeout_ms", INT32),
    Field("transaction_status", INT8),
    Field("transaction_partitions", ARRAY, nullable="0+", struct_name="PartitionsSchema", fields=(
        Field("topic", STRING),
        Field("partition_ids", ARRAY, item=INT32),
    )),
    Field("transaction_last_update_timestamp_ms", INT64),
    Field("transaction_start_timestamp_ms", INT64),
))

_VERSION = struct.Struct(">h")


class TransactionLogError(ValueError):
    """A `__transaction_state` key or value that is truncated, malformed or of an unknown
    version, or a value with an unknown state id."""


class UnknownKeyVersionError(TransactionLogError):
    """A key version this codec does not know: Kafka's loader skips such records
    (`UnknownKey`); an unknown *value* version is an error there and here."""

    def __init__(self, version: int) -> None:
        super().__init__(f"unknown key version {version} in {TRANSACTION_STATE_TOPIC}")
        self.version = version


@dataclass(frozen=True)
class TxnLogValue:
    """One value as stored: what a coordinator reloads for a transactional id."""

    producer_id: int
    producer_epoch: int
    txn_timeout_ms: int
    state: TransactionState
    topic_partitions: frozenset[TopicPartition]
    txn_last_update_timestamp_ms: int
    txn_start_timestamp_ms: int

    def to_metadata(self, transactional_id: str) -> TransactionMetadata:
        """Kafka's `readTxnRecordValue`: last producer id and epoch -1, no pending state."""
        return TransactionMetadata(
            transactional_id, self.producer_id, self.producer_epoch, self.txn_timeout_ms,
            self.txn_last_update_timestamp_ms, last_producer_id=NO_PRODUCER_ID,
            last_producer_epoch=NO_PRODUCER_EPOCH, state=self.state,
            topic_partitions=set(self.topic_partitions), txn_start_timestamp_ms=self.txn_start_timestamp_ms)


def _version(buf: bytes | bytearray | memoryview, kind: str) -> int:
    if len(buf) < 2:
        raise TransactionLogError(f"{kind} is truncated: {len(buf)} bytes, no version")
    return _VERSION.unpack_from(buf)[0]


def _decode(schema: DataSchema, version: int, buf: bytes | bytearray | memoryview, kind: str) -> dict:
    try:
        values, _ = codec.decode_data(schema, version, buf, 2)
    except codec.ProtocolError as e:
        raise TransactionLogError(f"{kind} v{version} is truncated or malformed: {e}") from None
    return values


def _encode(schema: DataSchema, version: int, values: dict) -> bytes:
    try:
        return bytes(codec.encode_data(schema, version, values, bytearray(_VERSION.pack(version))))
    except codec.EncodeError as e:
        raise TransactionLogError(f"{schema.name}: {e}") from None


def key_bytes(transactional_id: str) -> bytes:
    """The record key of a transactional id (version 0)."""
    return _encode(_KEY, KEY_VERSION, {"transactional_id": transactional_id})


def decode_key(key: bytes | bytearray | memoryview) -> str:
    """The transactional id of a key. Raises `UnknownKeyVersionError` for another version
    (callers skip the record, as Kafka's loader does), `TransactionLogError` when truncated."""
    version = _version(key, "key")
    if not _KEY.supports(version):
        raise UnknownKeyVersionError(version)
    return _decode(_KEY, version, key, "key")["transactional_id"]


def value_bytes(transit: TxnTransitMetadata, *, version: int = VALUE_VERSION) -> bytes:
    """The record value of a transition (Kafka's `valueToBytes`). Raises `TransactionLogError`
    for Empty with partitions (Kafka's IllegalStateException) or an unknown version."""
    if not _VALUE.supports(version):
        raise TransactionLogError(f"unknown value version {version}")
    if transit.txn_state is TransactionState.EMPTY and transit.topic_partitions:
        raise TransactionLogError(f"a transaction in state Empty has no partitions: {transit}")
    partitions = None
    if transit.txn_state is not TransactionState.EMPTY:
        by_topic: dict[str, list[int]] = defaultdict(list)
        for tp in sorted(transit.topic_partitions):
            by_topic[tp.topic].append(tp.partition)
        partitions = [{"topic": topic, "partition_ids": ids} for topic, ids in by_topic.items()]
    return _encode(_VALUE, version, {
        "producer_id": transit.producer_id,
        "producer_epoch": transit.producer_epoch,
        "transaction_timeout_ms": transit.txn_timeout_ms,
        "transaction_status": int(transit.txn_state),
        "transaction_partitions": partitions,
        "transaction_last_update_timestamp_ms": transit.txn_last_update_timestamp_ms,
        "transaction_start_timestamp_ms": transit.txn_start_timestamp_ms,
    })


def decode_value(value: bytes | bytearray | memoryview | None) -> TxnLogValue | None:
    """A stored value, None for a tombstone. An Empty value's partitions are ignored, as
    Kafka's reader ignores them. Raises `TransactionLogError` for an unknown version or
    state id, or a truncated value."""
    if value is None:
        return None
    version = _version(value, "value")
    if not _VALUE.supports(version):
        raise TransactionLogError(f"unknown value version {version} in {TRANSACTION_STATE_TOPIC}")
    v = _decode(_VALUE, version, value, "value")
    try:
        state = TransactionState(v["transaction_status"])
    except ValueError:
        raise TransactionLogError(
            f"unknown transaction state id {v['transaction_status']} in a transaction status value") from None
    partitions: frozenset[TopicPartition] = frozenset()
    if state is not TransactionState.EMPTY and v["transaction_partitions"]:
        partitions = frozenset(TopicPartition(p["topic"], pid)
                               for p in v["transaction_partitions"] for pid in p["partition_ids"])
    return TxnLogValue(v["producer_id"], v["producer_epoch"], v["transaction_timeout_ms"], state, partitions,
                       v["transaction_last_update_timestamp_ms"], v["transaction_start_timestamp_ms"])


def partition_for(transactional_id: str, partitions: int) -> int:
    """The `__transaction_state` partition of a transactional id, as Kafka's
    `TransactionStateManager.partitionFor`: `Utils.abs(transactionalId.hashCode) % partitions`
    (the same arithmetic as a group's offsets partition)."""
    return _group_partition_for(transactional_id, partitions)


def encode_transaction_batch(transactional_id: str, transit: TxnTransitMetadata, timestamp_ms: int) -> bytes:
    """The one-record v2 batch a coordinator appends for a transition (acks=all, no
    compression: Kafka's `EnforcedCompression`), offsets from 0 for the leader to assign."""
    return encode_batch([Record(0, timestamp_ms, key_bytes(transactional_id), value_bytes(transit))])


def tombstone_batch(transactional_id: str, timestamp_ms: int) -> bytes:
    """The batch that removes an expired transactional id."""
    return encode_batch([Record(0, timestamp_ms, key_bytes(transactional_id), None)])


def load(batches: bytes | bytearray | memoryview,
         on_unreadable: Callable[[str], None] | None = None) -> dict[str, TransactionMetadata]:
    """The transactional ids of a `__transaction_state` partition read from its log
    (concatenated v2 batches), as Kafka's `loadTransactionMetadata`: the last value of each
    id wins, a tombstone removes it, a key of an unknown version is skipped. A record without
    a key or with a bad value raises `TransactionLogError`, or, with `on_unreadable`, is
    reported to it and skipped. A trailing incomplete batch is ignored."""
    mv = batches if isinstance(batches, memoryview) else memoryview(batches)
    values: dict[str, TxnLogValue] = {}
    for header in list(iter_batches(mv)):
        if header.is_control:
            continue
        _, records = decode_records(mv, header.position)
        for record in records:
            try:
                if record.key is None:
                    raise TransactionLogError(f"record at offset {record.offset} has no key")
                txn_id = decode_key(record.key)
                value = decode_value(record.value)
            except UnknownKeyVersionError:
                continue
            except TransactionLogError as e:
                if on_unreadable is None:
                    raise
                on_unreadable(f"record at offset {record.offset}: {e}")
                continue
            if value is None:
                values.pop(txn_id, None)
            else:
                values[txn_id] = value
    return {txn_id: value.to_metadata(txn_id) for txn_id, value in values.items()}


__all__ = [
    "TRANSACTION_STATE_TOPIC", "load", "TransactionLogError", "TxnLogValue", "UnknownKeyVersionError",
    "decode_key", "decode_value", "encode_transaction_batch", "key_bytes", "partition_for",
    "tombstone_batch", "value_bytes",
]
