# Generated from Kafka's JSON message definitions (CreatePartitionsRequest.json, CreatePartitionsResponse.json) by tools/gen_protocol.py.
# DO NOT EDIT BY HAND: edit tools/gen_protocol.py and rerun it.
"""Kafka API 37, CreatePartitions: the request and response tables."""
from __future__ import annotations

from rafka.net.protocol.schema import Api, Field, ARRAY, BOOL, INT16, INT32, STRING

# CreatePartitionsRequest (validVersions 0-3, flexibleVersions 2+):
# Version 1 is the same as version 0.
#
# Version 2 adds flexible version support
#
# Version 3 is identical to version 2 but may return a THROTTLING_QUOTA_EXCEEDED error
# in the response if the partitions creation is throttled (KIP-599).
# CreatePartitionsResponse:
# Starting in version 1, on quota violation, brokers send out responses before throttling.
#
# Version 2 adds flexible version support
#
# Version 3 is identical to version 2 but may return a THROTTLING_QUOTA_EXCEEDED error
# in the response if the partitions creation is throttled (KIP-599).
CREATE_PARTITIONS = Api(
    key=37,
    name='CreatePartitions',
    versions=(0, 3),
    json_versions=(0, 3),
    flexible_from=2,
    request=[
        Field('topics', ARRAY, struct_name='CreatePartitionsTopic', fields=[
            Field('name', STRING),
            Field('count', INT32),
            Field('assignments', ARRAY, nullable='0+', struct_name='CreatePartitionsAssignment', fields=[
                Field('broker_ids', ARRAY, item=INT32),
            ]),
        ]),
        Field('timeout_ms', INT32),
        Field('validate_only', BOOL),
    ],
    response=[
        Field('throttle_time_ms', INT32),
        Field('results', ARRAY, struct_name='CreatePartitionsTopicResult', fields=[
            Field('name', STRING),
            Field('error_code', INT16),
            Field('error_message', STRING, nullable='0+', default=None),
        ]),
    ],
)
