"""A broker's log dirs as DescribeLogDirs sees them, and the files of a replica moving
between them (AlterReplicaLogDirs, KIP-113).

Names are Kafka's (UnifiedLog): a partition's current log is `<topic>-<p>`; a log being built
in another log dir is `<topic>-<p>.<32 hex>-future`; a log left for deletion is
`<topic>-<p>.<32 hex>-delete`. A move (`DirCopier`) copies the current log's files into the
future dir while the replica keeps serving: rounds of copying what changed since the last
round (segment files are append-only, and a compaction swap or retention gives a new inode or
name), then, with the replica closed, a last round and `swap_in_future`. The swap renames the
current dir to `-delete` (under the move's uuid) before the future dir takes the current name,
so a broker stopped in between finds no current dir, a future dir and a `-delete` dir of the
same uuid, and finishes the swap (`plan_move_recovery`); any other leftover future dir is
resumed (its partition's current log is elsewhere) or removed.

Sizes are Kafka's `log.size`: the bytes of the `<20 digits>.log` segment files (indexes, and
files on their way out, not counted). Blocking file work: callers run it in a thread.
"""
from __future__ import annotations

import enum
import os
import re
import shutil
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping

from rafka.common.types import TopicPartition
from rafka.partition_worker.cleaner import fsync_dir
from rafka.partition_worker.segment import iter_headers

FUTURE_SUFFIX = "-future"      # Kafka's UnifiedLog.FutureDirSuffix
DELETE_SUFFIX = "-delete"      # Kafka's UnifiedLog.DeleteDirSuffix
MAX_DIR_NAME = 255             # KAFKA-4893: a future dir name longer than this is refused
_MOVE_DIR = re.compile(r"^(?P<tp>.+-\d+)\.(?P<id>[0-9a-f]{32})(?P<suffix>-future|-delete)$")
_SEGMENT_LOG = re.compile(r"^(\d{20})\.log$")
_SEGMENT_FILE = re.compile(r"^(\d{20})\.(log|index|timeindex)$")
_NOT_COPIED = (".deleted", ".cleaned")   # on their way out, or a cleaning's scratch the next open drops
_CHUNK = 1 << 20
_TAIL_CHECK = 64 << 10   # bytes compared before appending only the new part of a segment


class DirKind(enum.Enum):
    CURRENT = "current"
    FUTURE = "future"
    DELETE = "delete"


@dataclass(frozen=True)
class PartitionDir:
    """A partition directory's name, parsed: whose log it is, and which kind."""

    tp: TopicPartition
    kind: DirKind
    move_id: str = ""   # the 32 hex digits of a future or -delete dir

    @property
    def name(self) -> str:
        if self.kind is DirKind.CURRENT:
            return str(self.tp)
        return f"{self.tp}.{self.move_id}{FUTURE_SUFFIX if self.kind is DirKind.FUTURE else DELETE_SUFFIX}"


def new_move_id() -> str:
    """A fresh uuid as Kafka writes it into dir names: 32 hex digits, no dashes."""
    return uuid.uuid4().hex


def future_dir(tp: TopicPartition, move_id: str) -> PartitionDir:
    return PartitionDir(tp, DirKind.FUTURE, move_id)


def parse_partition_dir(name: str) -> PartitionDir | None:
    """The partition dir `name` names, or None for anything else (files, foreign dirs)."""
    m = _MOVE_DIR.match(name)
    try:
        if m is not None:
            kind = DirKind.FUTURE if m["suffix"] == FUTURE_SUFFIX else DirKind.DELETE
            return PartitionDir(TopicPartition.parse(m["tp"]), kind, m["id"])
        return PartitionDir(TopicPartition.parse(name), DirKind.CURRENT)
    except ValueError:
        return None


def log_size(file_sizes: Mapping[str, int]) -> int:
    """Kafka's `log.size` from a partition dir's listing (file name -> bytes): its segments' `.log` files."""
    return sum(size for name, size in file_sizes.items() if _SEGMENT_LOG.match(name))


@dataclass(frozen=True)
class PartitionDirEntry:
    """One partition dir found in a log dir, with its log's size."""

    dir: PartitionDir
    size_bytes: int


def scan_log_dir(log_dir: str | Path) -> list[PartitionDirEntry]:
    """Every partition dir of `log_dir` (current, future and -delete) with its log size, by name.
    A dir that vanishes while listed (a deletion, a swap) is left out."""
    found = []
    with os.scandir(log_dir) as children:
        for child in children:
            parsed = parse_partition_dir(child.name)
            if parsed is None or not child.is_dir(follow_symlinks=False):
                continue
            try:
                with os.scandir(child.path) as files:
                    sizes = {f.name: f.stat(follow_symlinks=False).st_size for f in files
                             if _SEGMENT_LOG.match(f.name)}
            except FileNotFoundError:
                continue
            found.append(PartitionDirEntry(parsed, log_size(sizes)))
    return sorted(found, key=lambda e: e.dir.name)


@dataclass(frozen=True)
class VolumeSpace:
    total_bytes: int
    usable_bytes: int


def volume_space(path: str | Path) -> VolumeSpace:
    """Total and usable (for an unprivileged writer) bytes of the filesystem holding `path`,
    as Kafka's FileStore.getTotalSpace / getUsableSpace."""
    st = os.statvfs(path)
    return VolumeSpace(st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize)


def log_end_offset(directory: str | Path) -> int:
    """One past the last whole batch of the log in `directory` (its last segment's headers are
    walked; no CRC check), or -1 when it holds no segment."""
    bases = sorted(int(m[1]) for name in os.listdir(directory) if (m := _SEGMENT_LOG.match(name)))
    if not bases:
        return -1
    path = Path(directory) / f"{bases[-1]:020d}.log"
    end = bases[-1]
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        for h in iter_headers(lambda n, pos: os.pread(fd, n, pos), 0, size):
            end = h.last_offset + 1
    finally:
        os.close(fd)
    return end


class IoThrottle:
    """At most `bytes_per_s` across every copy that shares it (Kafka's
    replica.alter.log.dirs.io.max.bytes.per.second quota); `take` sleeps the calling thread."""

    def __init__(self, bytes_per_s: int, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self._rate = bytes_per_s
        self._clock, self._sleep = clock, sleep
        self._lock = threading.Lock()
        self._free_at = 0.0   # when the bytes taken so far have been paid for
        # Chunks of a tenth of a second's worth, so a slow rate is kept smoothly.
        self.chunk_bytes = _CHUNK if bytes_per_s >= (1 << 62) else min(_CHUNK, max(4096, bytes_per_s // 10))

    def take(self, n: int) -> None:
        if self._rate <= 0 or self._rate >= (1 << 62):
            return
        with self._lock:
            now = self._clock()
            self._free_at = max(self._free_at, now) + n / self._rate
            wait = self._free_at - now - 1.0   # a second's worth of burst
        if wait > 0:
            self._sleep(wait)


@dataclass
class CopyRound:
    """What one round of `DirCopier.copy_round` did."""

    bytes_copied: int = 0
    files_copied: list[str] = field(default_factory=list)
    files_removed: list[str] = field(default_factory=list)


class DirCopier:
    """Brings a future dir up to date with a partition's current dir, round by round.

    A file is copied again when its (inode, size, mtime) differ from the version copied
    last; a segment `.log` that only grew (same inode, and its last copied bytes unchanged)
    gets just its new bytes. The active segment's indexes are preallocated and written in
    place, so they are copied only in the `final` round (the replica closed, which trims them),
    which also copies every file that is not a segment file. A copied file keeps the mtime its
    source had before the copy, so a later round (or a copier after a broker restart) sees
    which files changed. Every copied file is fsynced. Not thread-safe: one thread at a time.
    """

    def __init__(self, source: str | Path, target: str | Path, throttle: IoThrottle | None = None) -> None:
        self.source, self.target = Path(source), Path(target)
        self._throttle = throttle
        self._copied: dict[str, tuple[int, int, int]] = {}   # name -> (inode, size, mtime_ns) of the source copied

    def copy_round(self, final: bool = False) -> CopyRound:
        """Copy what changed; remove from the target what the source no longer has.
        FileNotFoundError if the source dir is gone."""
        self.target.mkdir(parents=True, exist_ok=True)
        done = CopyRound()
        with os.scandir(self.source) as it:
            listing = {e.name: e.stat(follow_symlinks=False) for e in it
                       if e.is_file(follow_symlinks=False) and not e.name.endswith(_NOT_COPIED)}
        bases = [int(m[1]) for name in listing if (m := _SEGMENT_LOG.match(name))]
        last = f"{max(bases):020d}" if bases else None
        for name, st in sorted(listing.items()):
            segment = _SEGMENT_FILE.match(name)
            in_place = segment is not None and segment[1] == last and segment[2] != "log"
            if in_place and not final:
                continue
            always = final and (segment is None or segment[1] == last)
            if not always and self._unchanged(name, st):
                continue
            try:
                done.bytes_copied += self._copy(name, st)
            except FileNotFoundError:   # deleted meanwhile (retention): the next round removes our copy
                continue
            done.files_copied.append(name)
        for name in os.listdir(self.target):
            if name not in listing:
                (self.target / name).unlink()
                self._copied.pop(name, None)
                done.files_removed.append(name)
        if final:
            fsync_dir(self.target)
        return done

    def _unchanged(self, name: str, st: os.stat_result) -> bool:
        version = (st.st_ino, st.st_size, st.st_mtime_ns)
        if name not in self._copied:   # copied by an earlier copier (before a restart)?
            try:
                there = os.stat(self.target / name)
            except FileNotFoundError:
                return False
            if (there.st_size, there.st_mtime_ns) != (st.st_size, st.st_mtime_ns):
                return False
            self._copied[name] = version
        return self._copied[name] == version

    def _copy(self, name: str, st: os.stat_result) -> int:
        """Copy the first `st.st_size` bytes of the source file (a stable prefix of a file that
        only grows); returns the bytes written."""
        src_path, dst_path = self.source / name, self.target / name
        size = st.st_size
        src = os.open(src_path, os.O_RDONLY)
        try:
            start = self._appendable_from(name, st, src)
            dst = os.open(dst_path, os.O_WRONLY | os.O_CREAT | (0 if start else os.O_TRUNC), 0o644)
            try:
                if start:
                    os.ftruncate(dst, start)
                position = start
                step = self._throttle.chunk_bytes if self._throttle is not None else _CHUNK
                while position < size:
                    chunk = os.pread(src, min(step, size - position), position)
                    if not chunk:
                        raise FileNotFoundError(f"{src_path} shrank while copied")
                    if self._throttle is not None:
                        self._throttle.take(len(chunk))
                    os.pwrite(dst, chunk, position)
                    position += len(chunk)
                os.ftruncate(dst, size)
                os.fsync(dst)
            finally:
                os.close(dst)
        finally:
            os.close(src)
        os.utime(dst_path, ns=(st.st_atime_ns, st.st_mtime_ns))
        self._copied[name] = (st.st_ino, size, st.st_mtime_ns)
        return size - start

    def _appendable_from(self, name: str, st: os.stat_result, src: int) -> int:
        """Where copying may start: the end of the last copy of a segment `.log` that only grew
        since (same inode, larger, its last copied bytes the same), else 0."""
        before = self._copied.get(name)
        if before is None or not _SEGMENT_LOG.match(name) or before[0] != st.st_ino or before[1] > st.st_size:
            return 0
        copied = before[1]
        try:
            if os.stat(self.target / name).st_size != copied:
                return 0
            check = min(_TAIL_CHECK, copied)
            with open(self.target / name, "rb", buffering=0) as dst:
                if os.pread(dst.fileno(), check, copied - check) != os.pread(src, check, copied - check):
                    return 0
        except FileNotFoundError:
            return 0
        return copied


def swap_in_future(source_log_dir: str | Path, target_log_dir: str | Path, tp: TopicPartition,
                   move_id: str) -> Path:
    """Make the future dir of `tp` its current log: the current dir becomes `-delete` first,
    then the future dir takes the current name (each rename made durable). Returns the
    `-delete` dir, which the caller removes after file.delete.delay.ms. The replica must be
    closed and the final copy round done."""
    current = Path(source_log_dir) / str(tp)
    deleted = Path(source_log_dir) / PartitionDir(tp, DirKind.DELETE, move_id).name
    future = Path(target_log_dir) / future_dir(tp, move_id).name
    os.rename(current, deleted)
    fsync_dir(Path(source_log_dir))
    finish_swap(target_log_dir, tp, move_id)
    return deleted


def finish_swap(target_log_dir: str | Path, tp: TopicPartition, move_id: str) -> None:
    """The second half of `swap_in_future`: the future dir takes the current name."""
    os.rename(Path(target_log_dir) / future_dir(tp, move_id).name, Path(target_log_dir) / str(tp))
    fsync_dir(Path(target_log_dir))


@dataclass(frozen=True)
class MoveRecovery:
    """What a broker does at start with the partition dirs moves left behind."""

    complete: tuple[tuple[str, PartitionDir], ...] = ()        # (log dir, future dir): the swap was cut short
    resume: tuple[tuple[str, PartitionDir], ...] = ()          # (log dir, future dir): copy on
    remove: tuple[tuple[str, PartitionDir], ...] = ()          # (log dir, dir): delete


def plan_move_recovery(listing: Mapping[str, Iterable[str]]) -> MoveRecovery:
    """From each log dir's child names: a future dir whose partition has no current dir but
    a `-delete` dir of the same move is complete (its swap stopped between the two renames);
    one whose partition has a current dir in another log dir is resumed (one per partition);
    every other future dir, and every `-delete` dir, is removed."""
    parsed = [(d, p) for d, names in listing.items() for p in map(parse_partition_dir, names) if p is not None]
    current = {p.tp: d for d, p in parsed if p.kind is DirKind.CURRENT}
    deleted = {(p.tp, p.move_id) for _, p in parsed if p.kind is DirKind.DELETE}
    complete, resume, remove = [], [], []
    placed: set[TopicPartition] = set()
    for d, p in parsed:
        if p.kind is DirKind.DELETE:
            remove.append((d, p))
        elif p.kind is DirKind.FUTURE:
            if p.tp not in current and p.tp not in placed and (p.tp, p.move_id) in deleted:
                complete.append((d, p))
                placed.add(p.tp)
            elif p.tp in current and current[p.tp] != d and p.tp not in placed:
                resume.append((d, p))
                placed.add(p.tp)
            else:
                remove.append((d, p))
    return MoveRecovery(tuple(complete), tuple(resume), tuple(remove))


def recover_moves(log_dirs: Iterable[str]) -> MoveRecovery:
    """Carry out `plan_move_recovery` on disk (completing swaps, removing leftovers); returns
    the plan, whose `resume` entries the broker copies on once their replicas run."""
    dirs = [str(d) for d in log_dirs if Path(d).is_dir()]
    plan = plan_move_recovery({d: os.listdir(d) for d in dirs})
    for d, p in plan.complete:
        finish_swap(d, p.tp, p.move_id)
    for d, p in plan.remove:
        shutil.rmtree(Path(d) / p.name, ignore_errors=True)
    return plan

