# Generated from Kafka's JSON message definitions (AlterReplicaLogDirsRequest.json, AlterReplicaLogDirsResponse.json) by tools/gen_protocol.py.
# DO NOT EDIT BY HAND: edit tools/gen_protocol.py and rerun it.
"""Kafka API 34, AlterReplicaLogDirs: the request and response tables."""
from __future__ import annotations

from rafka.net.protocol.schema import Api, Field, ARRAY, INT16, INT32, STRING

# AlterReplicaLogDirsRequest (validVersions 1-2, flexibleVersions 2+):
# Version 0 was removed in Apache Kafka 4.0, Version 1 is the new baseline.
#
# Version 1 is the same as version 0.
# Version 2 enables flexible versions.
# AlterReplicaLogDirsResponse:
# Version 0 was removed in Apache Kafka 4.0, Version 1 is the new baseline.
# Starting in version 1, on quota violation brokers send out responses before throttling.
# Version 2 enables flexible versions.
# NOTE: v0 (the same as v1) restored: Kafka 3.9 serves it.
ALTER_REPLICA_LOG_DIRS = Api(
    key=34,
    name='AlterReplicaLogDirs',
    versions=(0, 2),
    json_versions=(0, 2),
    flexible_from=2,
    request=[
        Field('dirs', ARRAY, struct_name='AlterReplicaLogDir', fields=[
            Field('path', STRING),
            Field('topics', ARRAY, struct_name='AlterReplicaLogDirTopic', fields=[
                Field('name', STRING),
                Field('partitions', ARRAY, item=INT32),
            ]),
        ]),
    ],
    response=[
        Field('throttle_time_ms', INT32),
        Field('results', ARRAY, struct_name='AlterReplicaLogDirTopicResult', fields=[
            Field('topic_name', STRING),
            Field('partitions', ARRAY, struct_name='AlterReplicaLogDirPartitionResult', fields=[
                Field('partition_index', INT32),
                Field('error_code', INT16),
            ]),
        ]),
    ],
)
