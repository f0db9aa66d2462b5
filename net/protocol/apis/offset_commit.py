# Generated from Kafka's JSON message definitions (OffsetCommitRequest.json, OffsetCommitResponse.json) by tools/gen_protocol.py.
# DO NOT EDIT BY HAND: edit tools/gen_protocol.py and rerun it.
"""Kafka API 8, OffsetCommit: the request and response tables."""
from __future__ import annotations

from rafka.net.protocol.schema import Api, Field, ARRAY, INT16, INT32, INT64, STRING, UUID

# OffsetCommitRequest (validVersions 2-10, flexibleVersions 8+):
# Versions 0-1 were removed in Apache Kafka 4.0, Version 2 is the new baseline.
#
# Version 1 adds timestamp and group membership information, as well as the commit timestamp.
#
# Version 2 adds retention time.  It removes the commit timestamp added in version 1.
#
# Version 3 and 4 are the same as version 2.
#
# Version 5 removes the retention time, which is now controlled only by a broker configuration.
#
# Version 6 adds the leader epoch for fencing.
#
# version 7 adds a new field called groupInstanceId to indicate member identity across restarts.
#
# Version 8 is the first flexible version.
#
# Version 9 is the first version that can be used with the new consumer group protocol (KIP-848). The
# request is the same as version 8.
#
# Version 10 adds support for topic ids and removes support for topic names (KIP-848).
# OffsetCommitResponse:
# Versions 0-1 were removed in Apache Kafka 4.0, Version 2 is the new baseline.
#
# Versions 1 and 2 are the same as version 0.
#
# Version 3 adds the throttle time to the response.
#
# Starting in version 4, on quota violation, brokers send out responses before throttling.
#
# Versions 5 and 6 are the same as version 4.
#
# Version 7 offsetCommitRequest supports a new field called groupInstanceId to indicate member identity across restarts.
#
# Version 8 is the first flexible version.
#
# Version 9 is the first version that can be used with the new consumer group protocol (KIP-848). The response is
# the same as version 8 but can return STALE_MEMBER_EPOCH when the new consumer group protocol is used and
# GROUP_ID_NOT_FOUND when the group does not exist for both protocols.
#
# Version 10 adds support for topic ids and removes support for topic names (KIP-848).
# Supported errors:
# - GROUP_AUTHORIZATION_FAILED (version 0+)
# - NOT_COORDINATOR (version 0+)
# - COORDINATOR_NOT_AVAILABLE (version 0+)
# - COORDINATOR_LOAD_IN_PROGRESS (version 0+)
# - ILLEGAL_GENERATION (version 1+)
# - UNKNOWN_MEMBER_ID (version 1+)
# - INVALID_COMMIT_OFFSET_SIZE (version 0+)
# - FENCED_MEMBER_EPOCH (version 7+)
# - GROUP_ID_NOT_FOUND (version 9+)
# - STALE_MEMBER_EPOCH (version 9+)
# - UNKNOWN_TOPIC_ID (version 10+)
OFFSET_COMMIT = Api(
    key=8,
    name='OffsetCommit',
    versions=(2, 9),
    json_versions=(2, 10),
    flexible_from=8,
    request=[
        Field('group_id', STRING),
        Field('generation_id_or_member_epoch', INT32, versions='1+', default=-1, ignorable=True),
        Field('member_id', STRING, versions='1+', ignorable=True),
        Field('group_instance_id', STRING, versions='7+', nullable='7+', default=None),
        Field('retention_time_ms', INT64, versions='2-4', default=-1, ignorable=True),
        Field('topics', ARRAY, struct_name='OffsetCommitRequestTopic', fields=[
            Field('name', STRING, versions='0-9', ignorable=True),
            Field('topic_id', UUID, versions='10+', ignorable=True),
            Field('partitions', ARRAY, struct_name='OffsetCommitRequestPartition', fields=[
                Field('partition_index', INT32),
                Field('committed_offset', INT64),
                Field('committed_leader_epoch', INT32, versions='6+', default=-1, ignorable=True),
                Field('commit_timestamp', INT64, versions='1', default=-1),
                Field('committed_metadata', STRING, nullable='0+'),
            ]),
        ]),
    ],
    response=[
        Field('throttle_time_ms', INT32, versions='3+', ignorable=True),
        Field('topics', ARRAY, struct_name='OffsetCommitResponseTopic', fields=[
            Field('name', STRING, versions='0-9', ignorable=True),
            Field('topic_id', UUID, versions='10+', ignorable=True),
            Field('partitions', ARRAY, struct_name='OffsetCommitResponsePartition', fields=[
                Field('partition_index', INT32),
                Field('error_code', INT16),
            ]),
        ]),
    ],
)
