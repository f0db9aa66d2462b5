# Generated from Kafka's JSON message definitions (OffsetFetchRequest.json, OffsetFetchResponse.json) by tools/gen_protocol.py.
# DO NOT EDIT BY HAND: edit tools/gen_protocol.py and rerun it.
"""Kafka API 9, OffsetFetch: the request and response tables."""
from __future__ import annotations

from rafka.net.protocol.schema import Api, Field, ARRAY, BOOL, INT16, INT32, INT64, STRING, UUID

# OffsetFetchRequest (validVersions 1-10, flexibleVersions 6+):
# Version 0 was removed in Apache Kafka 4.0, Version 1 is the new baseline.
#
# In version 0, the request read offsets from ZK.
#
# Starting in version 1, the broker supports fetching offsets from the internal __consumer_offsets topic.
#
# Starting in version 2, the request can contain a null topics array to indicate that offsets
# for all topics should be fetched. It also returns a top level error code
# for group or coordinator level errors.
#
# Version 3, 4, and 5 are the same as version 2.
#
# Version 6 is the first flexible version.
#
# Version 7 is adding the require stable flag.
#
# Version 8 is adding support for fetching offsets for multiple groups at a time.
#
# Version 9 is the first version that can be used with the new consumer group protocol (KIP-848). It adds
# the MemberId and MemberEpoch fields. Those are filled in and validated when the new consumer protocol is used.
#
# Version 10 adds support for topic ids and removes support for topic names (KIP-848).
# OffsetFetchResponse:
# Version 0 was removed in Apache Kafka 4.0, Version 1 is the new baseline.
#
# Version 1 is the same as version 0.
#
# Version 2 adds a top-level error code.
#
# Version 3 adds the throttle time.
#
# Starting in version 4, on quota violation, brokers send out responses before throttling.
#
# Version 5 adds the leader epoch to the committed offset.
#
# Version 6 is the first flexible version.
#
# Version 7 adds pending offset commit as new error response on partition level.
#
# Version 8 is adding support for fetching offsets for multiple groups
#
# Version 9 is the first version that can be used with the new consumer group protocol (KIP-848). The response is
# the same as version 8 but can return STALE_MEMBER_EPOCH and UNKNOWN_MEMBER_ID errors when the new consumer group
# protocol is used.
#
# Version 10 adds support for topic ids and removes support for topic names (KIP-848).
# It can return UNKNOWN_TOPIC_ID if topic IDs used and the topic is not found in metadata.
# Supported errors:
# - GROUP_AUTHORIZATION_FAILED (version 0+)
# - NOT_COORDINATOR (version 0+)
# - COORDINATOR_NOT_AVAILABLE (version 0+)
# - COORDINATOR_LOAD_IN_PROGRESS (version 0+)
# - GROUP_ID_NOT_FOUND (version 0+)
# - UNSTABLE_OFFSET_COMMIT (version 7+)
# - UNKNOWN_MEMBER_ID (version 9+)
# - STALE_MEMBER_EPOCH (version 9+)
# - UNKNOWN_TOPIC_ID (version 10+)
OFFSET_FETCH = Api(
    key=9,
    name='OffsetFetch',
    versions=(1, 9),
    json_versions=(1, 10),
    flexible_from=6,
    request=[
        Field('group_id', STRING, versions='0-7'),
        Field('topics', ARRAY, versions='0-7', nullable='2-7', struct_name='OffsetFetchRequestTopic', fields=[
            Field('name', STRING, versions='0-7'),
            Field('partition_indexes', ARRAY, versions='0-7', item=INT32),
        ]),
        Field('groups', ARRAY, versions='8+', struct_name='OffsetFetchRequestGroup', fields=[
            Field('group_id', STRING, versions='8+'),
            Field('member_id', STRING, versions='9+', nullable='9+', default=None, ignorable=True),
            Field('member_epoch', INT32, versions='9+', default=-1, ignorable=True),
            Field('topics', ARRAY, versions='8+', nullable='8+', struct_name='OffsetFetchRequestTopics', fields=[
                Field('name', STRING, versions='8-9', ignorable=True),
                Field('topic_id', UUID, versions='10+', ignorable=True),
                Field('partition_indexes', ARRAY, versions='8+', item=INT32),
            ]),
        ]),
        Field('require_stable', BOOL, versions='7+', default=False),
    ],
    response=[
        Field('throttle_time_ms', INT32, versions='3+', ignorable=True),
        Field('topics', ARRAY, versions='0-7', struct_name='OffsetFetchResponseTopic', fields=[
            Field('name', STRING, versions='0-7'),
            Field('partitions', ARRAY, versions='0-7', struct_name='OffsetFetchResponsePartition', fields=[
                Field('partition_index', INT32, versions='0-7'),
                Field('committed_offset', INT64, versions='0-7'),
                Field('committed_leader_epoch', INT32, versions='5-7', default=-1, ignorable=True),
                Field('metadata', STRING, versions='0-7', nullable='0-7'),
                Field('error_code', INT16, versions='0-7'),
            ]),
        ]),
        Field('error_code', INT16, versions='2-7', default=0, ignorable=True),
        Field('groups', ARRAY, versions='8+', struct_name='OffsetFetchResponseGroup', fields=[
            Field('group_id', STRING, versions='8+'),
            Field('topics', ARRAY, versions='8+', struct_name='OffsetFetchResponseTopics', fields=[
                Field('name', STRING, versions='8-9', ignorable=True),
                Field('topic_id', UUID, versions='10+', ignorable=True),
                Field('partitions', ARRAY, versions='8+', struct_name='OffsetFetchResponsePartitions', fields=[
                    Field('partition_index', INT32, versions='8+'),
                    Field('committed_offset', INT64, versions='8+'),
                    Field('committed_leader_epoch', INT32, versions='8+', default=-1, ignorable=True),
                    Field('metadata', STRING, versions='8+', nullable='8+'),
                    Field('error_code', INT16, versions='8+'),
                ]),
            ]),
            Field('error_code', INT16, versions='8+', default=0),
        ]),
    ],
)
