# Generated from Kafka's JSON message definitions (OffsetForLeaderEpochRequest.json, OffsetForLeaderEpochResponse.json) by tools/gen_protocol.py.
# DO NOT EDIT BY HAND: edit tools/gen_protocol.py and rerun it.
"""Kafka API 23, OffsetForLeaderEpoch: the request and response tables."""
from __future__ import annotations

from rafka.net.protocol.schema import Api, Field, ARRAY, INT16, INT32, INT64, STRING

# OffsetForLeaderEpochRequest (validVersions 2-4, flexibleVersions 4+):
# Versions 0-1 were removed in Apache Kafka 4.0, Version 2 is the new baseline.
#
# Version 1 is the same as version 0.
#
# Version 2 adds the current leader epoch to support fencing.
#
# Version 3 adds ReplicaId (the default is -2 which conventionally represents a
#    "debug" consumer which is allowed to see offsets beyond the high watermark).
#    Followers will use this replicaId when using an older version of the protocol.
#
# Version 4 enables flexible versions.
# OffsetForLeaderEpochResponse:
# Versions 0-1 were removed in Apache Kafka 4.0, Version 2 is the new baseline.
#
# Version 1 added the leader epoch to the response.
#
# Version 2 added the throttle time.
#
# Version 3 is the same as version 2.
#
# Version 4 enables flexible versions.
OFFSET_FOR_LEADER_EPOCH = Api(
    key=23,
    name='OffsetForLeaderEpoch',
    versions=(2, 4),
    json_versions=(2, 4),
    flexible_from=4,
    request=[
        Field('replica_id', INT32, versions='3+', default=-2, ignorable=True),
        Field('topics', ARRAY, struct_name='OffsetForLeaderTopic', fields=[
            Field('topic', STRING),
            Field('partitions', ARRAY, struct_name='OffsetForLeaderPartition', fields=[
                Field('partition', INT32),
                Field('current_leader_epoch', INT32, versions='2+', default=-1, ignorable=True),
                Field('leader_epoch', INT32),
            ]),
        ]),
    ],
    response=[
        Field('throttle_time_ms', INT32, versions='2+', ignorable=True),
        Field('topics', ARRAY, struct_name='OffsetForLeaderTopicResult', fields=[
            Field('topic', STRING),
            Field('partitions', ARRAY, struct_name='EpochEndOffset', fields=[
                Field('error_code', INT16),
                Field('partition', INT32),
                Field('leader_epoch', INT32, versions='1+', default=-1, ignorable=True),
                Field('end_offset', INT64, default=-1),
            ]),
        ]),
    ],
)
