"""A broker's log directories: `meta.properties` identity (which broker.id a log dir belongs to)
and placing new partitions."""
from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Collection, Iterable, Mapping

from rafka.common.config import read_properties
from rafka.common.errors import KafkaStorageError, StartupError
from rafka.common.types import TopicPartition

META_PROPERTIES = "meta.properties"


def node_id_mismatch(stored: int, expected: int, meta_path: str | Path) -> StartupError:
    """Kafka 3.9's refusal of a log dir that belongs to another broker (MetaPropertiesEnsemble.verify)."""
    return StartupError(
        f"Stored node id {stored} doesn't match previous node id {expected} in {meta_path}. If you moved your "
        "data, make sure your configured node id matches. If you intend to create a new node, you should remove "
        "all data in your data directories.")


def stored_broker_ids(log_dirs: Iterable[str | Path]) -> dict[str, int | None]:
    """`<log dir>/meta.properties` -> its broker.id (None: no file, or a file without one), in
    Kafka's order (by path)."""
    stored: dict[str, int | None] = {}
    for d in sorted(str(d) for d in log_dirs):
        meta = Path(d) / META_PROPERTIES
        broker_id = read_properties(meta.read_text()).get("broker.id") if meta.is_file() else None
        stored[str(meta)] = int(broker_id) if broker_id not in (None, "") else None
    return stored


def choose_broker_id(configured: int, stored: Mapping[str, int | None], generation_enable: bool) -> int | None:
    """Kafka's KafkaServer.getOrGenerateBrokerId, after its meta.properties check: the
    configured broker.id (>= 0), else the one the log dirs' meta.properties hold, else None:
    generate one (ZooKeeper's `/brokers/seqid`). A log dir holding another id than the
    configured one, or than an earlier log dir, is refused with Kafka's message (StartupError).
    `stored`: meta.properties path -> broker.id, as `stored_broker_ids` gives them."""
    expected = configured if configured >= 0 else None
    for path, broker_id in stored.items():
        if broker_id is None:
            continue
        if expected is None:
            expected = broker_id
        elif broker_id != expected:
            raise node_id_mismatch(broker_id, expected, path)
    if expected is None and not generation_enable:
        raise StartupError("No broker ID found, and broker.id.generation.enable is disabled.")
    return expected


def check_meta_properties(log_dir: str | Path, broker_id: int, cluster_id: str) -> None:
    """Create `meta.properties` (Kafka's ZooKeeper-mode v0 format) or refuse a foreign log dir.

    A log dir written by another broker or another cluster is refused with a clear message,
    as Kafka does (MetaPropertiesEnsemble.verify / InconsistentClusterIdException).
    """
    path = Path(log_dir)
    path.mkdir(parents=True, exist_ok=True)
    meta = path / META_PROPERTIES
    if meta.exists():
        props = read_properties(meta.read_text())
        if props.get("broker.id") not in (None, str(broker_id)):
            raise node_id_mismatch(int(props["broker.id"]), broker_id, meta)
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


def choose_log_dir(log_dirs: tuple[str, ...], tp: TopicPartition, *, failed: Collection[str] = ()) -> str:
    """Where `tp` lives: its existing dir (even a failed one: its replica serves reads), else the
    log dir with the fewest partitions among those not `failed` (Kafka's rule); KafkaStorageError
    when every dir failed.

    A partition directory on a failed dir that holds no record (placed there as the dir failed,
    before its broker knew) is removed, and the partition placed on a working dir instead."""
    existing = find_partition_dir(log_dirs, tp)
    if existing is not None and existing in failed and not _holds_records(Path(existing) / str(tp)):
        shutil.rmtree(Path(existing) / str(tp), ignore_errors=True)
        existing = None
    if existing is not None:
        return existing
    usable = [d for d in log_dirs if d not in failed]
    if not usable:
        raise KafkaStorageError(f"Cannot create a log for {tp}: every log dir of this broker is offline")

    def partitions_in(d: str) -> int:
        p = Path(d)
        return sum(1 for child in p.iterdir() if child.is_dir()) if p.is_dir() else 0

    return min(usable, key=partitions_in)


def _holds_records(partition_dir: Path) -> bool:
    """Whether any segment file of the partition directory holds a byte."""
    return any(p.stat().st_size > 0 for p in partition_dir.glob("*.log"))
