"""Which broker.id a broker starts under (Kafka's KafkaServer.getOrGenerateBrokerId).

broker.id >= 0 is taken as configured; broker.id=-1 takes the id that the log dirs'
`meta.properties` hold, else, with broker.id.generation.enable, a new one from ZooKeeper:
the version of `/brokers/seqid` after a write to it, plus reserved.broker.max.id (1001,
1002, ... with Kafka's defaults), never one a configured id may take. A generated id is
written to every log dir's `meta.properties` at once, so the broker keeps it across
restarts even if this start fails later.

A broker's actors are named by its id, so this runs before any of them exists: `rafka.cluster`
runs `resolve_broker_id` as a Ray task on the broker's node, where its log dirs are. The
decision itself is `partition_worker.log_dirs.choose_broker_id` (pure). Blocking: file reads
and ZooKeeper round trips.
"""
from __future__ import annotations

import logging

from rafka.common.config import BrokerConfig
from rafka.common.errors import StartupError
from rafka.coordinator.zk.zk_store import ZkStore
from rafka.partition_worker.log_dirs import check_meta_properties, choose_broker_id, stored_broker_ids

log = logging.getLogger(__name__)


def resolve_broker_id(config: BrokerConfig) -> int:
    """The broker.id `config` starts under (see the module docstring). StartupError when a log
    dir belongs to another broker, or when ZooKeeper cannot give a sequence id."""
    chosen = choose_broker_id(config.broker_id, stored_broker_ids(config.log_dirs),
                              config.broker_id_generation_enable)
    if chosen is not None:
        return chosen
    try:
        with ZkStore(config.zookeeper_connect, config.zookeeper_session_timeout_ms) as zk:
            broker_id = zk.generate_broker_sequence_id() + config.reserved_broker_max_id
            cluster_id = zk.ensure_cluster_id()
    except StartupError:
        raise
    except Exception as e:  # noqa: BLE001 - Kafka's GenerateBrokerIdException, with its cause
        raise StartupError(f"Failed to generate broker.id: {e!r}") from e
    for d in config.log_dirs:
        check_meta_properties(d, broker_id, cluster_id)
    log.info("[Broker id=%d] generated broker.id %d from ZooKeeper's /brokers/seqid and wrote it to "
             "meta.properties in %s", broker_id, broker_id, ", ".join(config.log_dirs))
    return broker_id
