# Generated from Kafka's JSON message definitions (*Request.json, *Response.json) by tools/gen_protocol.py.
# DO NOT EDIT BY HAND: edit tools/gen_protocol.py and rerun it.
"""Registry of the APIs rafka speaks: `APIS` (api key -> Api), `API_BY_NAME`."""
from __future__ import annotations

from rafka.net.protocol.schema import Api

from .add_offsets_to_txn import ADD_OFFSETS_TO_TXN
from .add_partitions_to_txn import ADD_PARTITIONS_TO_TXN
from .alter_configs import ALTER_CONFIGS
from .alter_replica_log_dirs import ALTER_REPLICA_LOG_DIRS
from .api_versions import API_VERSIONS
from .create_partitions import CREATE_PARTITIONS
from .create_topics import CREATE_TOPICS
from .delete_groups import DELETE_GROUPS
from .delete_records import DELETE_RECORDS
from .delete_topics import DELETE_TOPICS
from .describe_cluster import DESCRIBE_CLUSTER
from .describe_configs import DESCRIBE_CONFIGS
from .describe_groups import DESCRIBE_GROUPS
from .describe_log_dirs import DESCRIBE_LOG_DIRS
from .elect_leaders import ELECT_LEADERS
from .end_txn import END_TXN
from .fetch import FETCH
from .find_coordinator import FIND_COORDINATOR
from .heartbeat import HEARTBEAT
from .incremental_alter_configs import INCREMENTAL_ALTER_CONFIGS
from .init_producer_id import INIT_PRODUCER_ID
from .join_group import JOIN_GROUP
from .leave_group import LEAVE_GROUP
from .list_groups import LIST_GROUPS
from .list_offsets import LIST_OFFSETS
from .metadata import METADATA
from .offset_commit import OFFSET_COMMIT
from .offset_delete import OFFSET_DELETE
from .offset_fetch import OFFSET_FETCH
from .offset_for_leader_epoch import OFFSET_FOR_LEADER_EPOCH
from .produce import PRODUCE
from .sasl_authenticate import SASL_AUTHENTICATE
from .sasl_handshake import SASL_HANDSHAKE
from .sync_group import SYNC_GROUP
from .txn_offset_commit import TXN_OFFSET_COMMIT
from .write_txn_markers import WRITE_TXN_MARKERS

APIS: dict[int, Api] = {
    0: PRODUCE,
    1: FETCH,
    2: LIST_OFFSETS,
    3: METADATA,
    8: OFFSET_COMMIT,
    9: OFFSET_FETCH,
    10: FIND_COORDINATOR,
    11: JOIN_GROUP,
    12: HEARTBEAT,
    13: LEAVE_GROUP,
    14: SYNC_GROUP,
    15: DESCRIBE_GROUPS,
    16: LIST_GROUPS,
    17: SASL_HANDSHAKE,
    18: API_VERSIONS,
    19: CREATE_TOPICS,
    20: DELETE_TOPICS,
    21: DELETE_RECORDS,
    22: INIT_PRODUCER_ID,
    23: OFFSET_FOR_LEADER_EPOCH,
    24: ADD_PARTITIONS_TO_TXN,
    25: ADD_OFFSETS_TO_TXN,
    26: END_TXN,
    27: WRITE_TXN_MARKERS,
    28: TXN_OFFSET_COMMIT,
    32: DESCRIBE_CONFIGS,
    33: ALTER_CONFIGS,
    34: ALTER_REPLICA_LOG_DIRS,
    35: DESCRIBE_LOG_DIRS,
    36: SASL_AUTHENTICATE,
    37: CREATE_PARTITIONS,
    42: DELETE_GROUPS,
    43: ELECT_LEADERS,
    44: INCREMENTAL_ALTER_CONFIGS,
    47: OFFSET_DELETE,
    60: DESCRIBE_CLUSTER,
}

API_BY_NAME: dict[str, Api] = {api.name: api for api in APIS.values()}

__all__ = ["APIS", "API_BY_NAME", "ADD_OFFSETS_TO_TXN", "ADD_PARTITIONS_TO_TXN", "ALTER_CONFIGS", "ALTER_REPLICA_LOG_DIRS", "API_VERSIONS", "CREATE_PARTITIONS", "CREATE_TOPICS", "DELETE_GROUPS", "DELETE_RECORDS", "DELETE_TOPICS", "DESCRIBE_CLUSTER", "DESCRIBE_CONFIGS", "DESCRIBE_GROUPS", "DESCRIBE_LOG_DIRS", "ELECT_LEADERS", "END_TXN", "FETCH", "FIND_COORDINATOR", "HEARTBEAT", "INCREMENTAL_ALTER_CONFIGS", "INIT_PRODUCER_ID", "JOIN_GROUP", "LEAVE_GROUP", "LIST_GROUPS", "LIST_OFFSETS", "METADATA", "OFFSET_COMMIT", "OFFSET_DELETE", "OFFSET_FETCH", "OFFSET_FOR_LEADER_EPOCH", "PRODUCE", "SASL_AUTHENTICATE", "SASL_HANDSHAKE", "SYNC_GROUP", "TXN_OFFSET_COMMIT", "WRITE_TXN_MARKERS"]
