"""Kafka's ZooKeeper paths and znode JSON, exactly as Kafka 3.9 writes them (`kafka.zk.ZkData`),
under one name (`from rafka.coordinator.zk import zk_data as zd`). This module only gathers:

- `zk_paths.py`: the paths;
- `zk_json.py`: compact JSON and Kafka's `Uuid` text, shared by the codecs;
- `zk_cluster_data.py`: `/cluster/id`, `/brokers/ids/<id>`, `/controller`, `/controller_epoch`,
  `/latest_producer_id_block`;
- `zk_topic_data.py`: topic assignments, partition states, topic configs and their change
  notifications;
- `zk_notification_data.py`: ISR change and log dir event notifications, offline replicas.

All are pure functions and frozen values: no kazoo, no I/O; `zk_store.py` does the reading and
writing. JSON is written compactly, as Jackson does (`{"version":1,...}`); decoders accept
every field Kafka may write and ignore the rest, so a rafka broker and a Kafka broker can
read each other's znodes.
"""
from __future__ import annotations

from rafka.coordinator.zk.zk_cluster_data import *  # noqa: F401,F403
from rafka.coordinator.zk.zk_json import *  # noqa: F401,F403
from rafka.coordinator.zk.zk_notification_data import *  # noqa: F401,F403
from rafka.coordinator.zk.zk_paths import *  # noqa: F401,F403
from rafka.coordinator.zk.zk_topic_data import *  # noqa: F401,F403
