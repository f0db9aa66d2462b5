"""How a conditional ZooKeeper write is refused: the conflict errors callers branch on (re-read,
then decide again), and the check of a kazoo transaction's results."""
from __future__ import annotations

from typing import Any

from kazoo.exceptions import RolledBackError


class ZnodeVersionConflictError(Exception):
    """A conditional write lost: the znode is no longer at the expected version, or its
    existence differs from what the caller assumed. Re-read it and decide again."""


class PartitionStateConflictError(ZnodeVersionConflictError):
    """A conditional write of a partition state lost: the znode is no longer at the expected
    version (someone else wrote it) or its existence differs from what the caller assumed.
    Re-read the state and decide again."""


def raise_first(results: list[Any]) -> None:
    """Raise the first error of a committed transaction's results (the operations rolled back
    with it say only that)."""
    for r in results:
        if isinstance(r, Exception) and not isinstance(r, RolledBackError):
            raise r
