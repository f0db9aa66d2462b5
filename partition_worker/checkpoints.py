"""Kafka's small checkpoint files, byte for byte.

Per log dir (one writer: the broker's coordinator):
- `recovery-point-offset-checkpoint`, `log-start-offset-checkpoint`, `cleaner-offset-checkpoint`,
  `replication-offset-checkpoint` (high watermarks): Kafka's OffsetCheckpointFile: a version line `0`, a count line, then `<topic> <partition> <offset>`.

Per partition directory (one writer: the replica that owns it):
- `leader-epoch-checkpoint`: version `0`, count, then `<epoch> <start offset>` lines (LeaderEpochFileCache);
- `partition.metadata`: `version: 0` and `topic_id: <base64url topic id>` (PartitionMetadataFile).

Every write goes to `<file>.tmp`, is fsynced and renamed over the file, then the directory is
fsynced: a crash leaves the old or the new file, never a mix (Kafka's CheckpointFile.write).
"""
from __future__ import annotations

import base64
import logging
import os
import uuid
from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from rafka.common.types import TopicPartition

log = logging.getLogger(__name__)

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
HIGH_WATERMARK_CHECKPOINT = "replication-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
UNDEFINED_EPOCH = -1         # Kafka's OffsetsForLeaderEpochResponse.UNDEFINED_EPOCH
UNDEFINED_EPOCH_OFFSET = -1  # and UNDEFINED_EPOCH_OFFSET
PARTITION_METADATA = "partition.metadata"
_VERSION = 0


class CorruptCheckpointError(Exception):
    """A checkpoint file that is not in Kafka's format (its path and the bad line are in the message)."""


def write_atomically(path: Path, text: str) -> None:
    """Replace `path` by `text` so that a crash leaves either the old or the new content."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(text.encode())
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _read_entries(path: Path, fields_per_line: int) -> list[list[str]] | None:
    """The entry lines of a versioned checkpoint, split; None when the file does not exist."""
    try:
        lines = Path(path).read_text().splitlines()
    except FileNotFoundError:
        return None
    if len(lines) < 2:
        raise CorruptCheckpointError(f"checkpoint file {path} is missing its version or count line")
    if lines[0].strip() != str(_VERSION):
        raise CorruptCheckpointError(f"unrecognised version of the checkpoint file {path}: {lines[0]!r}")
    try:
        count = int(lines[1])
    except ValueError:
        raise CorruptCheckpointError(f"malformed count line in checkpoint file {path}: {lines[1]!r}") from None
    entries = [line.split() for line in lines[2:] if line.strip()]
    if len(entries) != count:
        raise CorruptCheckpointError(
            f"expected {count} entries in checkpoint file {path}, but found only {len(entries)}")
    for parts in entries:
        if len(parts) != fields_per_line:
            raise CorruptCheckpointError(f"malformed line in checkpoint file {path}: {' '.join(parts)!r}")
    return entries


def read_offset_checkpoint(path: str | Path) -> dict[TopicPartition, int]:
    """Offsets by partition from an OffsetCheckpointFile; {} when the file does not exist."""
    entries = _read_entries(Path(path), 3)
    out: dict[TopicPartition, int] = {}
    for topic, partition, offset in entries or ():
        try:
            out[TopicPartition(topic, int(partition))] = int(offset)
        except ValueError:
            raise CorruptCheckpointError(
                f"malformed line in checkpoint file {path}: {topic} {partition} {offset}") from None
    return out


def write_offset_checkpoint(path: str | Path, offsets: dict[TopicPartition, int]) -> None:
    """Write an OffsetCheckpointFile (entries sorted, so equal content gives equal bytes)."""
    lines = [str(_VERSION), str(len(offsets))]
    lines += [f"{tp.topic} {tp.partition} {offset}" for tp, offset in sorted(offsets.items())]
    write_atomically(Path(path), "\n".join(lines) + "\n")


@dataclass
class LogDirCheckpoints:
    """The per-log-dir checkpoints of Kafka's LogManager, LogCleaner and ReplicaManager (high
    watermarks), for one log dir."""

    log_dir: Path
    recovery_points: dict[TopicPartition, int] = field(default_factory=dict)
    log_start_offsets: dict[TopicPartition, int] = field(default_factory=dict)
    cleaner_offsets: dict[TopicPartition, int] = field(default_factory=dict)
    high_watermarks: dict[TopicPartition, int] = field(default_factory=dict)

    _FILES = ((RECOVERY_POINT_CHECKPOINT, "recovery_points"), (LOG_START_OFFSET_CHECKPOINT, "log_start_offsets"),
              (CLEANER_OFFSET_CHECKPOINT, "cleaner_offsets"), (HIGH_WATERMARK_CHECKPOINT, "high_watermarks"))

    @classmethod
    def load(cls, log_dir: str | Path) -> "LogDirCheckpoints":
        """Read what exists. A corrupt file is logged and ignored: without its values the log is
        recovered from its start and cleaned from its start, which loses nothing."""
        out = cls(Path(log_dir))
        for name, attr in cls._FILES:
            try:
                setattr(out, attr, read_offset_checkpoint(out.log_dir / name))
            except CorruptCheckpointError as e:
                log.error("ignoring %s: %s", name, e)
        return out

    def write(self, *, recovery_points: bool = True, log_start_offsets: bool = True,
              cleaner_offsets: bool = True) -> None:
        """Write the chosen files from the current values (each atomically); the high watermarks
        go with the recovery points."""
        chosen = {RECOVERY_POINT_CHECKPOINT: recovery_points, LOG_START_OFFSET_CHECKPOINT: log_start_offsets,
                  CLEANER_OFFSET_CHECKPOINT: cleaner_offsets, HIGH_WATERMARK_CHECKPOINT: recovery_points}
        for name, attr in self._FILES:
            if chosen[name]:
                write_offset_checkpoint(self.log_dir / name, getattr(self, attr))

    def forget(self, tp: TopicPartition) -> None:
        """Drop a partition whose log was deleted."""
        for _, attr in self._FILES:
            getattr(self, attr).pop(tp, None)


# -- partition.metadata ------------------------------------------------------------------------
def topic_id_text(topic_id: uuid.UUID) -> str:
    """Kafka's string form of a Uuid: URL-safe base64 of its 16 bytes, without padding."""
    return base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")


def parse_topic_id(text: str) -> uuid.UUID:
    padded = text + "=" * (-len(text) % 4)
    raw = base64.urlsafe_b64decode(padded)
    if len(raw) != 16:
        raise ValueError(f"not a topic id: {text!r}")
    return uuid.UUID(bytes=raw)


def read_partition_metadata(partition_dir: str | Path) -> uuid.UUID | None:
    """The topic id in `partition.metadata`, or None when the file does not exist."""
    path = Path(partition_dir) / PARTITION_METADATA
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    fields_ = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    if fields_.get("version", "").strip() != str(_VERSION) or "topic_id" not in fields_:
        raise CorruptCheckpointError(f"malformed partition metadata file {path}: {text!r}")
    try:
        return parse_topic_id(fields_["topic_id"].strip())
    except ValueError as e:
        raise CorruptCheckpointError(f"malformed topic id in {path}: {e}") from None


def write_partition_metadata(partition_dir: str | Path, topic_id: uuid.UUID) -> None:
    write_atomically(Path(partition_dir) / PARTITION_METADATA,
                     f"version: {_VERSION}\ntopic_id: {topic_id_text(topic_id)}\n")


def check_topic_id(directory: Path, tp: TopicPartition, topic_id: uuid.UUID | None) -> None:
    """Write `partition.metadata`, or refuse (RuntimeError) a directory that belongs to another
    topic id (a deleted topic's leftovers under a recreated name), as Kafka does."""
    if topic_id is None or topic_id.int == 0:
        return
    directory.mkdir(parents=True, exist_ok=True)
    stored = read_partition_metadata(directory)
    if stored is None:
        write_partition_metadata(directory, topic_id)
    elif stored != topic_id:
        raise RuntimeError(
            f"The topic id {topic_id_text(topic_id)} of {tp} does not match the topic id "
            f"{topic_id_text(stored)} in {directory}/partition.metadata (InconsistentTopicIdException)")


# -- leader-epoch-checkpoint -------------------------------------------------------------------------
@dataclass(frozen=True)
class EpochEntry:
    epoch: int
    start_offset: int


class LeaderEpochCache:
    """Kafka's LeaderEpochFileCache: the first offset each leader epoch wrote, persisted on change.

    Epochs and start offsets both increase. Used to answer "where does epoch E end?" (the next
    epoch's start offset, or the log end for the latest epoch), which followers and KIP-320
    clients ask after a leader change.
    """

    def __init__(self, partition_dir: str | Path) -> None:
        self.path = Path(partition_dir) / LEADER_EPOCH_CHECKPOINT
        self._entries: list[EpochEntry] = []
        try:
            for epoch, start in _read_entries(self.path, 2) or ():
                self._entries.append(EpochEntry(int(epoch), int(start)))
        except (CorruptCheckpointError, ValueError) as e:
            log.error("ignoring %s: %s", self.path, e)
            self._entries = []

    @property
    def entries(self) -> tuple[EpochEntry, ...]:
        return tuple(self._entries)

    @property
    def latest_epoch(self) -> int | None:
        return self._entries[-1].epoch if self._entries else None

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that `epoch` starts at `start_offset`; True when the cache changed.

        As Kafka: nothing changes when the latest entry has this epoch and starts at or before
        `start_offset`; otherwise entries with an epoch or start offset at or above the new ones
        are dropped (they were never confirmed) and the entry is added.
        """
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"leader epoch {epoch} and start offset {start_offset} must not be negative")
        latest = self._entries[-1] if self._entries else None
        if latest is not None and latest.epoch == epoch and start_offset >= latest.start_offset:
            return False
        self._entries = [e for e in self._entries if e.epoch < epoch and e.start_offset < start_offset]
        self._entries.append(EpochEntry(epoch, start_offset))
        self._flush()
        return True

    def truncate_from_end(self, end_offset: int) -> None:
        """Drop epochs that start at or after `end_offset` (the log was truncated there); a
        negative `end_offset` changes nothing (Kafka's truncateFromEnd)."""
        if end_offset < 0:
            return
        keep = [e for e in self._entries if e.start_offset < end_offset]
        if len(keep) != len(self._entries):
            self._entries = keep
            self._flush()

    def truncate_from_start(self, start_offset: int) -> None:
        """The log now starts at `start_offset`: drop epochs that ended before it and move the
        start of the epoch holding it up to it."""
        starts = [e.start_offset for e in self._entries]
        i = bisect_right(starts, start_offset) - 1
        if i < 0:
            return
        kept = [EpochEntry(self._entries[i].epoch, start_offset)] + self._entries[i + 1:]
        if kept != self._entries:
            self._entries = kept
            self._flush()

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) answering OffsetForLeaderEpoch for `epoch` (`epoch_end_offset`)."""
        return epoch_end_offset(self._entries, epoch, log_end_offset)

    def _flush(self) -> None:
        lines = [str(_VERSION), str(len(self._entries))] + [f"{e.epoch} {e.start_offset}" for e in self._entries]
        write_atomically(self.path, "\n".join(lines) + "\n")


def epoch_end_offset(entries: Sequence[EpochEntry], epoch: int, log_end_offset: int) -> tuple[int, int]:
    """(epoch, end offset) answering OffsetForLeaderEpoch for `epoch`, as Kafka 3.9's
    `LeaderEpochFileCache.endOffsetFor`. The end offset of an epoch is the start offset of
    the first larger epoch known, or `log_end_offset` for the latest one:

    - the latest epoch: (it, `log_end_offset`);
    - an epoch between two known ones (it never led, or led without writing): the largest
      known epoch below it and the start of the next known one;
    - an epoch below the first known one: (`epoch`, the first known epoch's start offset).
      Older Kafka answered UNDEFINED_EPOCH_OFFSET here; since 2.x the data before the first
      epoch is taken as gone, and the follower truncates to where the leader's log begins;
    - UNDEFINED_EPOCH (-1), an empty cache, or an epoch above the latest one:
      (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET), i.e. (-1, -1).
    """
    if epoch == UNDEFINED_EPOCH or not entries:
        return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
    if epoch == entries[-1].epoch:
        return epoch, log_end_offset
    i = bisect_right([e.epoch for e in entries], epoch)  # entries[i]: the first epoch above it
    if i == len(entries):
        return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
    if i == 0:
        return epoch, entries[0].start_offset
    return entries[i - 1].epoch, entries[i].start_offset
