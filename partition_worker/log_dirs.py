"""A broker's log directories: `meta.properties` identity checks and placing new partitions."""
from __future__ import annotations

import os
import time
from pathlib import Path

from rafka.common.config import read_properties
from rafka.common.errors import StartupError
from rafka.common.types import TopicPartition

META_PROPERTIES = "meta.properties"


def check_meta_properties(log_dir: str | Path, broker_id: int, cluster_id: str) -> None:
    """Create `meta.properties` (Kafka's ZooKeeper-mode v0 format) or refuse a foreign log dir.

    A log dir written by another broker or another cluster is refused with a clear message,
    as Kafka does (InconsistentBrokerIdException / InconsistentClusterIdException).
    """
    path = Path(log_dir)
    path.mkdir(parents=True, exist_ok=True)
    meta = path / META_PROPERTIES
    if meta.exists():
        props = read_properties(meta.read_text())
        if props.get("broker.id") not in (None, str(broker_id)):
            raise StartupError(
                f"Configured broker.id {broker_id} doesn't match stored broker.id {props['broker.id']} "
                f"in meta.properties of {path}. If you moved your data, make sure your configured "
                "broker.id matches.")
        if props.get("cluster.id") not in (None, cluster_id):
            raise StartupError(
                f"The Cluster ID {cluster_id} doesn't match stored clusterId {props['cluster.id']} in "
                f"meta.properties of {path}. The broker is trying to join the wrong cluster.")
        return
    text = (f"#\n#{time.strftime('%a %b %d %H:%M:%S UTC %Y', time.gmtime())}\n"
            f"cluster.id={cluster_id}\nversion=0\nbroker.id={broker_id}\n")
    tmp = meta.with_suffix(".tmp")
    tmp.write_text(text)
    os.replace(tmp, meta)


def find_partition_dir(log_dirs: tuple[str, ...], tp: TopicPartition) -> str | None:
    """The log dir that already holds `tp`, if any."""
    for d in log_dirs:
        if (Path(d) / str(tp)).is_dir():
            return d
    return None


def choose_log_dir(log_dirs: tuple[str, ...], tp: TopicPartition) -> str:
    """Where `tp` lives: its existing dir, else the log dir with the fewest partitions (Kafka's rule)."""
    existing = find_partition_dir(log_dirs, tp)
    if existing is not None:
        return existing

    def partitions_in(d: str) -> int:
        p = Path(d)
        return sum(1 for child in p.iterdir() if child.is_dir()) if p.is_dir() else 0

    return min(log_dirs, key=partitions_in)
