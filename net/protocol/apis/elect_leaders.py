# Generated from Kafka's JSON message definitions (ElectLeadersRequest.json, ElectLeadersResponse.json) by tools/gen_protocol.py.
# DO NOT EDIT BY HAND: edit tools/gen_protocol.py and rerun it.
"""Kafka API 43, ElectLeaders: the request and response tables."""
from __future__ import annotations

from rafka.net.protocol.schema import Api, Field, ARRAY, INT16, INT32, INT8, STRING

# ElectLeadersRequest (validVersions 0-2, flexibleVersions 2+):
# Version 1 implements multiple leader election types, as described by KIP-460.
#
# Version 2 is the first flexible version.
# ElectLeadersResponse:
# Version 1 adds a top-level error code.
#
# Version 2 is the first flexible version.
ELECT_LEADERS = Api(
    key=43,
    name='ElectLeaders',
    versions=(0, 2),
    json_versions=(0, 2),
    flexible_from=2,
    request=[
        Field('election_type', INT8, versions='1+'),
        Field('topic_partitions', ARRAY, nullable='0+', struct_name='TopicPartitions', fields=[
            Field('topic', STRING),
            Field('partitions', ARRAY, item=INT32),
        ]),
        Field('timeout_ms', INT32, default=60000),
    ],
    response=[
        Field('throttle_time_ms', INT32),
        Field('error_code', INT16, versions='1+'),
        Field('replica_election_results', ARRAY, struct_name='ReplicaElectionResult', fields=[
            Field('topic', STRING),
            Field('partition_result', ARRAY, struct_name='PartitionResult', fields=[
                Field('partition_id', INT32),
                Field('error_code', INT16),
                Field('error_message', STRING, nullable='0+'),
            ]),
        ]),
    ],
)
