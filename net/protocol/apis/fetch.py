# Generated from Kafka's JSON message definitions (FetchRequest.json, FetchResponse.json) by tools/gen_protocol.py.
# DO NOT EDIT BY HAND: edit tools/gen_protocol.py and rerun it.
"""Kafka API 1, Fetch: the request and response tables."""
from __future__ import annotations

from rafka.net.protocol.schema import Api, Field, ARRAY, INT16, INT32, INT64, INT8, RECORDS, STRING, STRUCT, UUID

# FetchRequest (validVersions 4-18, flexibleVersions 12+):
# Versions 0-3 were removed in Apache Kafka 4.0, Version 4 is the new baseline.
#
# Version 1 is the same as version 0.
# Starting in Version 2, the requester must be able to handle Kafka Log
# Message format version 1.
# Version 3 adds MaxBytes.  Starting in version 3, the partition ordering in
# the request is now relevant.  Partitions will be processed in the order
# they appear in the request.
#
# Version 4 adds IsolationLevel.  Starting in version 4, the requestor must be
# able to handle Kafka log message format version 2.
#
# Version 5 adds LogStartOffset to indicate the earliest available offset of
# partition data that can be consumed.
#
# Version 6 is the same as version 5.
#
# Version 7 adds incremental fetch request support.
#
# Version 8 is the same as version 7.
#
# Version 9 adds CurrentLeaderEpoch, as described in KIP-320.
#
# Version 10 indicates that we can use the ZStd compression algorithm, as
# described in KIP-110.
# Version 12 adds flexible versions support as well as epoch validation through
# the `LastFetchedEpoch` field
#
# Version 13 replaces topic names with topic IDs (KIP-516). May return UNKNOWN_TOPIC_ID error code.
#
# Version 14 is the same as version 13 but it also receives a new error called OffsetMovedToTieredStorageException(KIP-405)
#
# Version 15 adds the ReplicaState which includes new field ReplicaEpoch and the ReplicaId. Also,
# deprecate the old ReplicaId field and set its default value to -1. (KIP-903)
#
# Version 16 is the same as version 15 (KIP-951).
#
# Version 17 adds directory id support from KIP-853
#
# Version 18 adds high-watermark from KIP-1166
# FetchResponse:
# Versions 0-3 were removed in Apache Kafka 4.0, Version 4 is the new baseline.
#
# Version 1 adds throttle time. Version 2 and 3 are the same as version 1.
#
# Version 4 adds features for transactional consumption.
#
# Version 5 adds LogStartOffset to indicate the earliest available offset of
# partition data that can be consumed.
#
# Starting in version 6, we may return KAFKA_STORAGE_ERROR as an error code.
#
# Version 7 adds incremental fetch request support.
#
# Starting in version 8, on quota violation, brokers send out responses before throttling.
#
# Version 9 is the same as version 8.
#
# Version 10 indicates that the response data can use the ZStd compression
# algorithm, as described in KIP-110.
# Version 12 adds support for flexible versions, epoch detection through the `TruncationOffset` field,
# and leader discovery through the `CurrentLeader` field
#
# Version 13 replaces the topic name field with topic ID (KIP-516).
#
# Version 14 is the same as version 13 but it also receives a new error called OffsetMovedToTieredStorageException (KIP-405)
#
# Version 15 is the same as version 14 (KIP-903).
#
# Version 16 adds the 'NodeEndpoints' field (KIP-951).
#
# Version 17 no changes to the response (KIP-853).
#
# Version 18 no changes to the response (KIP-1166)
FETCH = Api(
    key=1,
    name='Fetch',
    versions=(4, 12),
    json_versions=(4, 18),
    flexible_from=12,
    request=[
        Field('cluster_id', STRING, versions='12+', nullable='12+', tag=0, tagged='12+', default=None, ignorable=True),
        Field('replica_id', INT32, versions='0-14', default=-1),
        Field('replica_state', STRUCT, versions='15+', tag=1, tagged='15+', struct_name='ReplicaState', fields=[
            Field('replica_id', INT32, versions='15+', default=-1),
            Field('replica_epoch', INT64, versions='15+', default=-1),
        ]),
        Field('max_wait_ms', INT32),
        Field('min_bytes', INT32),
        Field('max_bytes', INT32, versions='3+', default=2147483647, ignorable=True),
        Field('isolation_level', INT8, versions='4+', default=0, ignorable=True),
        Field('session_id', INT32, versions='7+', default=0, ignorable=True),
        Field('session_epoch', INT32, versions='7+', default=-1, ignorable=True),
        Field('topics', ARRAY, struct_name='FetchTopic', fields=[
            Field('topic', STRING, versions='0-12', ignorable=True),
            Field('topic_id', UUID, versions='13+', ignorable=True),
            Field('partitions', ARRAY, struct_name='FetchPartition', fields=[
                Field('partition', INT32),
                Field('current_leader_epoch', INT32, versions='9+', default=-1, ignorable=True),
                Field('fetch_offset', INT64),
                Field('last_fetched_epoch', INT32, versions='12+', default=-1),
                Field('log_start_offset', INT64, versions='5+', default=-1, ignorable=True),
                Field('partition_max_bytes', INT32),
                Field('replica_directory_id', UUID, versions='17+', tag=0, tagged='17+', ignorable=True),
                Field('high_watermark', INT64, versions='18+', tag=1, tagged='18+', default=9223372036854775807, ignorable=True),
            ]),
        ]),
        Field('forgotten_topics_data', ARRAY, versions='7+', struct_name='ForgottenTopic', fields=[
            Field('topic', STRING, versions='7-12', ignorable=True),
            Field('topic_id', UUID, versions='13+', ignorable=True),
            Field('partitions', ARRAY, versions='7+', item=INT32),
        ]),
        Field('rack_id', STRING, versions='11+', default='', ignorable=True),
    ],
    response=[
        Field('throttle_time_ms', INT32, versions='1+', ignorable=True),
        Field('error_code', INT16, versions='7+', ignorable=True),
        Field('session_id', INT32, versions='7+', default=0),
        Field('responses', ARRAY, struct_name='FetchableTopicResponse', fields=[
            Field('topic', STRING, versions='0-12', ignorable=True),
            Field('topic_id', UUID, versions='13+', ignorable=True),
            Field('partitions', ARRAY, struct_name='PartitionData', fields=[
                Field('partition_index', INT32),
                Field('error_code', INT16),
                Field('high_watermark', INT64),
                Field('last_stable_offset', INT64, versions='4+', default=-1, ignorable=True),
                Field('log_start_offset', INT64, versions='5+', default=-1, ignorable=True),
                Field('diverging_epoch', STRUCT, versions='12+', tag=0, tagged='12+', struct_name='EpochEndOffset', fields=[
                    Field('epoch', INT32, versions='12+', default=-1),
                    Field('end_offset', INT64, versions='12+', default=-1),
                ]),
                Field('current_leader', STRUCT, versions='12+', tag=1, tagged='12+', struct_name='LeaderIdAndEpoch', fields=[
                    Field('leader_id', INT32, versions='12+', default=-1),
                    Field('leader_epoch', INT32, versions='12+', default=-1),
                ]),
                Field('snapshot_id', STRUCT, versions='12+', tag=2, tagged='12+', struct_name='SnapshotId', fields=[
                    Field('end_offset', INT64, default=-1),
                    Field('epoch', INT32, default=-1),
                ]),
                Field('aborted_transactions', ARRAY, versions='4+', nullable='4+', ignorable=True, struct_name='AbortedTransaction', fields=[
                    Field('producer_id', INT64, versions='4+'),
                    Field('first_offset', INT64, versions='4+'),
                ]),
                Field('preferred_read_replica', INT32, versions='11+', default=-1),
                Field('records', RECORDS, nullable='0+'),
            ]),
        ]),
        Field('node_endpoints', ARRAY, versions='16+', tag=0, tagged='16+', struct_name='NodeEndpoint', fields=[
            Field('node_id', INT32, versions='16+'),
            Field('host', STRING, versions='16+'),
            Field('port', INT32, versions='16+'),
            Field('rack', STRING, versions='16+', nullable='16+', default=None),
        ]),
    ],
)
