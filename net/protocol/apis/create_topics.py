# Generated from Kafka's JSON message definitions (CreateTopicsRequest.json, CreateTopicsResponse.json) by tools/gen_protocol.py.
# DO NOT EDIT BY HAND: edit tools/gen_protocol.py and rerun it.
"""Kafka API 19, CreateTopics: the request and response tables."""
from __future__ import annotations

from rafka.net.protocol.schema import Api, Field, ARRAY, BOOL, INT16, INT32, INT8, STRING, UUID

# CreateTopicsRequest (validVersions 2-7, flexibleVersions 5+):
# Versions 0-1 were removed in Apache Kafka 4.0, Version 2 is the new baseline.
#
# Version 1 adds validateOnly.
#
# Version 4 makes partitions/replicationFactor optional even when assignments are not present (KIP-464)
#
# Version 5 is the first flexible version.
# Version 5 also returns topic configs in the response (KIP-525).
#
# Version 6 is identical to version 5 but may return a THROTTLING_QUOTA_EXCEEDED error
# in the response if the topics creation is throttled (KIP-599).
#
# Version 7 is the same as version 6.
# CreateTopicsResponse:
# Versions 0-1 were removed in Apache Kafka 4.0, Version 2 is the new baseline.
#
# Version 1 adds a per-topic error message string.
#
# Version 2 adds the throttle time.
#
# Starting in version 3, on quota violation, brokers send out responses before throttling.
#
# Version 4 makes partitions/replicationFactor optional even when assignments are not present (KIP-464).
#
# Version 5 is the first flexible version.
# Version 5 also returns topic configs in the response (KIP-525).
#
# Version 6 is identical to version 5 but may return a THROTTLING_QUOTA_EXCEEDED error
# in the response if the topics creation is throttled (KIP-599).
#
# Version 7 returns the topic ID of the newly created topic if creation is successful.
CREATE_TOPICS = Api(
    key=19,
    name='CreateTopics',
    versions=(2, 7),
    json_versions=(2, 7),
    flexible_from=5,
    request=[
        Field('topics', ARRAY, struct_name='CreatableTopic', fields=[
            Field('name', STRING),
            Field('num_partitions', INT32),
            Field('replication_factor', INT16),
            Field('assignments', ARRAY, struct_name='CreatableReplicaAssignment', fields=[
                Field('partition_index', INT32),
                Field('broker_ids', ARRAY, item=INT32),
            ]),
            Field('configs', ARRAY, struct_name='CreatableTopicConfig', fields=[
                Field('name', STRING),
                Field('value', STRING, nullable='0+'),
            ]),
        ]),
        Field('timeout_ms', INT32, default=60000),
        Field('validate_only', BOOL, versions='1+', default=False),
    ],
    response=[
        Field('throttle_time_ms', INT32, versions='2+', ignorable=True),
        Field('topics', ARRAY, struct_name='CreatableTopicResult', fields=[
            Field('name', STRING),
            Field('topic_id', UUID, versions='7+', ignorable=True),
            Field('error_code', INT16),
            Field('error_message', STRING, versions='1+', nullable='0+', ignorable=True),
            Field('topic_config_error_code', INT16, versions='5+', tag=0, tagged='5+', ignorable=True),
            Field('num_partitions', INT32, versions='5+', default=-1, ignorable=True),
            Field('replication_factor', INT16, versions='5+', default=-1, ignorable=True),
            Field('configs', ARRAY, versions='5+', nullable='5+', ignorable=True, struct_name='CreatableTopicConfigs', fields=[
                Field('name', STRING, versions='5+'),
                Field('value', STRING, versions='5+', nullable='5+'),
                Field('read_only', BOOL, versions='5+'),
                Field('config_source', INT8, versions='5+', default=-1, ignorable=True),
                Field('is_sensitive', BOOL, versions='5+'),
            ]),
        ]),
    ],
)
