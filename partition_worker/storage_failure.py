"""A log whose disk failed: one I/O error on a write path takes the log offline for writes.

Kafka's `LogDirFailureChannel`: when a write to a log (append, roll, index, checkpoint,
producer snapshot, fsync) throws an IOException, the log dir is marked offline, the request
is answered KAFKA_STORAGE_ERROR, and no later write touches that dir. Here the log that hit
the error goes offline itself (`storage_write`), its replica tells its broker, and the broker
takes every other log of that dir offline too (`PartitionLog.mark_offline`).

Reads go on: an offline log still serves what is on disk up to the high watermark, which
Kafka does not do (docs/storage.md, "A full or failing disk", and docs/compatibility.md);
the broker moves leadership to another in-sync replica where there is one, and keeps a
partition without one readable.
"""
from __future__ import annotations

import errno
import functools
from typing import Callable, Protocol, TypeVar

from rafka.common.errors import KafkaStorageError

F = TypeVar("F", bound=Callable)


class _Failable(Protocol):
    offline_reason: str | None

    def mark_offline(self, reason: str, error: BaseException | None = None) -> None: ...


def describe_os_error(error: OSError) -> str:
    """`ENOSPC (No space left on device)`, or the error's text when it has no errno."""
    name = errno.errorcode.get(error.errno or 0)
    return f"{name} ({error.strerror})" if name and error.strerror else str(error)


def storage_write(method: F) -> F:
    """Decorate a write path of a log: refused with KafkaStorageError once the log is offline,
    and an OSError inside it takes the log offline (logged once, by `mark_offline`) and is
    raised as KafkaStorageError. Nested write paths raise the KafkaStorageError through."""
    @functools.wraps(method)
    def wrapper(self: _Failable, *args: object, **kwargs: object) -> object:
        if self.offline_reason is not None:
            raise KafkaStorageError(self.offline_reason)
        try:
            return method(self, *args, **kwargs)
        except OSError as e:
            self.mark_offline(f"{method.__name__} failed: {describe_os_error(e)}", e)
            raise KafkaStorageError(self.offline_reason) from e
    return wrapper  # type: ignore[return-value]
