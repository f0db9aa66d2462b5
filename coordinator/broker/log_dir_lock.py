"""`LogDirLocks`: the `.lock` file of each log dir, held by the broker for as long as it runs.

As Kafka's LogManager does, a broker takes an exclusive lock on `<log dir>/.lock` at start, so
a second broker process on the same dirs is refused with Kafka's message rather than writing
into the same files. The lock is an advisory `flock`, which the kernel drops when its holder
dies, however it dies.

That makes it a proof rafka uses at a restart: the broker writes its ZooKeeper session id
into the lock files once registered. A broker started again after a kill -9 takes the lock,
so the process that wrote the session there is gone, and its registration
(`/brokers/ids/<id>`, and `/controller` if it was the controller) can be removed at once
instead of waiting for the session to expire (zookeeper.session.timeout.ms, 18 s by default;
a restart waited up to twice that). Only nodes still owned by that session are removed.
"""
from __future__ import annotations

import fcntl
import logging
import os
from pathlib import Path
from typing import Iterable

from rafka.common.errors import StartupError

LOCK_FILE = ".lock"

log = logging.getLogger(__name__)


class LogDirLocks:
    """The locks of one broker's log dirs (each dir must exist)."""

    def __init__(self, log_dirs: Iterable[str]) -> None:
        self.log_dirs = tuple(log_dirs)
        self._held: dict[str, int] = {}   # log dir -> the locked file's descriptor

    def acquire(self) -> None:
        """Lock every log dir; StartupError, with nothing left locked, when another process
        holds one. A dir whose lock file cannot be opened at all (a failed disk) is left to
        the log dir checks that follow."""
        try:
            for log_dir in self.log_dirs:
                path = Path(log_dir) / LOCK_FILE
                try:
                    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
                except OSError as e:
                    log.warning("cannot open %s: %s", path, e)
                    continue
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    raise StartupError(f"Failed to acquire lock on file {LOCK_FILE} in {log_dir}. A Kafka instance "
                                       "in another process or thread is using this directory.") from None
                self._held[log_dir] = fd
        except BaseException:
            self.release()
            raise

    def previous_sessions(self) -> set[int]:
        """The ZooKeeper sessions the last holders of these locks wrote: processes now gone."""
        sessions = set()
        for fd in self._held.values():
            try:
                text = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
            except OSError:
                continue
            if text.isdigit() and int(text) > 0:   # (0 owns no ephemeral node: persistent ones)
                sessions.add(int(text))
        return sessions

    def note_session(self, session_id: int) -> None:
        """Write this broker's ZooKeeper session into every lock file it holds (none: 0)."""
        if session_id <= 0:
            return
        data = b"%d\n" % session_id
        for log_dir, fd in self._held.items():
            try:
                os.ftruncate(fd, 0)
                os.pwrite(fd, data, 0)
            except OSError as e:
                log.warning("cannot note the ZooKeeper session in %s: %s", Path(log_dir) / LOCK_FILE, e)

    def release(self) -> None:
        """Unlock (closing the files unlocks them); the files stay, as Kafka's do."""
        held, self._held = self._held, {}
        for fd in held.values():
            os.close(fd)
