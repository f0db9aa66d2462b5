"""Topics of the session's broker, as a test sees and tidies them: every topic a test makes
is deleted when it ends, so the shared broker never carries the replicas (one process each)
of tests that are over."""
from __future__ import annotations

import functools
from typing import Iterable

from tests.waiting import wait_until


@functools.lru_cache(maxsize=4)
def _admin(bootstrap: str):  # noqa: ANN202 - confluent_kafka's AdminClient
    """One admin client per cluster (each test asks twice or three times; a new client costs
    its start and a connection each time)."""
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap})


def user_topics(bootstrap: str) -> set[str]:
    """The names of the topics a client made (internal `__` topics left out)."""
    return {name for name in _admin(bootstrap).list_topics(timeout=30).topics if not name.startswith("__")}


def delete_topics(bootstrap: str, names: Iterable[str]) -> None:
    """Delete `names` and wait until metadata no longer lists them, so a later test may
    make a topic of the same name."""
    names = sorted(names)
    if not names:
        return
    admin = _admin(bootstrap)
    for future in admin.delete_topics(names, operation_timeout=30).values():
        future.result(60)
    wait_until(lambda: not set(names) & set(admin.list_topics(timeout=30).topics), timeout_s=60,
               message=f"topics {names} gone from metadata")
