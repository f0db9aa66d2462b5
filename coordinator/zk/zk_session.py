"""ZooKeeper session helpers that need no `ZkStore`: clearing a previous run's ephemerals."""
from __future__ import annotations

import logging

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from rafka.common.errors import StartupError
from rafka.coordinator.zk import zk_data as zd
from rafka.coordinator.zk.zk_store import split_chroot

log = logging.getLogger(__name__)


def clear_stale_ephemerals(connect: str, timeout_s: float = 10.0) -> list[str]:
    """Delete `/controller` and every `/brokers/ids/<id>` left by sessions of a previous run.

    Only for a ZooKeeper this process just started (the embedded default): nobody else can be
    connected yet, so every such ephemeral belongs to a dead broker whose session ZooKeeper
    restored from its snapshot and would otherwise keep until it expires. Returns the paths
    removed."""
    hosts, chroot = split_chroot(connect)
    client = KazooClient(hosts=hosts, timeout=10.0)
    try:
        client.start(timeout=timeout_s)
    except KazooTimeoutError as e:
        client.close()
        raise StartupError(f"Cannot connect to ZooKeeper at {connect} within {timeout_s:.0f} s") from e
    removed = []
    try:
        ids = f"{chroot}{zd.BROKER_IDS_PATH}"
        try:
            children = [f"{ids}/{c}" for c in client.get_children(ids)]
        except NoNodeError:
            children = []
        for path in [f"{chroot}{zd.CONTROLLER_PATH}", *children]:
            stat = client.exists(path)
            if stat is not None and stat.ephemeralOwner:
                try:
                    client.delete(path)
                    removed.append(path)
                except NoNodeError:
                    pass
    finally:
        client.stop()
        client.close()
    if removed:
        log.info("removed stale ephemeral znodes of a previous run: %s", removed)
    return removed
