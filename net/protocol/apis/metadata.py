# Generated from Kafka's JSON message definitions (MetadataRequest.json, MetadataResponse.json) by tools/gen_protocol.py.
# DO NOT EDIT BY HAND: edit tools/gen_protocol.py and rerun it.
"""Kafka API 3, Metadata: the request and response tables."""
from __future__ import annotations

from rafka.net.protocol.schema import Api, Field, ARRAY, BOOL, INT16, INT32, STRING, UUID

# MetadataResponse:
# Version 1 adds fields for the rack of each broker, the controller id, and whether or not the topic is internal.
#
# Version 2 adds the cluster ID field.
#
# Version 3 adds the throttle time.
#
# Version 4 is the same as version 3.
#
# Version 5 adds a per-partition offline_replicas field. This field specifies
# the list of replicas that are offline.
#
# Starting in version 6, on quota violation, brokers send out responses before throttling.
#
# Version 7 adds the leader epoch to the partition metadata.
#
# Starting in version 8, brokers can send authorized operations for topic and cluster.
#
# Version 9 is the first flexible version.
#
# Version 10 adds topicId.
#
# Version 11 deprecates ClusterAuthorizedOperations. This is now exposed
# by the DescribeCluster API (KIP-700).
# Version 12 supports topicId.
# Version 13 supports top-level error code in the response.
METADATA = Api(
    key=3,
    name='Metadata',
    versions=(0, 12),
    json_versions=(0, 13),
    flexible_from=9,
    request=[
        # In version 0, an empty array indicates "request metadata for all topics."  In version 1 and
        # higher, an empty array indicates "request metadata for no topics," and a null array is used to
        # indicate "request metadata for all topics."
        #
        # Version 2 and 3 are the same as version 1.
        #
        # Version 4 adds AllowAutoTopicCreation.
        #
        # Starting in version 8, authorized operations can be requested for cluster and topic resource.
        #
        # Version 9 is the first flexible version.
        #
        # Version 10 adds topicId and allows name field to be null. However, this functionality was not implemented on the server.
        # Versions 10 and 11 should not use the topicId field or set topic name to null.
        #
        # Version 11 deprecates IncludeClusterAuthorizedOperations field. This is now exposed
        # by the DescribeCluster API (KIP-700).
        # Version 12 supports topic Id.
        # Version 13 supports top-level error code in the response.
        Field('topics', ARRAY, nullable='1+', struct_name='MetadataRequestTopic', fields=[
            Field('topic_id', UUID, versions='10+', ignorable=True),
            Field('name', STRING, nullable='10+'),
        ]),
        Field('allow_auto_topic_creation', BOOL, versions='4+', default=True),
        Field('include_cluster_authorized_operations', BOOL, versions='8-10'),
        Field('include_topic_authorized_operations', BOOL, versions='8+'),
    ],
    response=[
        Field('throttle_time_ms', INT32, versions='3+', ignorable=True),
        Field('brokers', ARRAY, struct_name='MetadataResponseBroker', fields=[
            Field('node_id', INT32),
            Field('host', STRING),
            Field('port', INT32),
            Field('rack', STRING, versions='1+', nullable='1+', default=None, ignorable=True),
        ]),
        Field('cluster_id', STRING, versions='2+', nullable='2+', default=None, ignorable=True),
        Field('controller_id', INT32, versions='1+', default=-1, ignorable=True),
        Field('topics', ARRAY, struct_name='MetadataResponseTopic', fields=[
            Field('error_code', INT16),
            Field('name', STRING, nullable='12+'),
            Field('topic_id', UUID, versions='10+', ignorable=True),
            Field('is_internal', BOOL, versions='1+', default=False, ignorable=True),
            Field('partitions', ARRAY, struct_name='MetadataResponsePartition', fields=[
                Field('error_code', INT16),
                Field('partition_index', INT32),
                Field('leader_id', INT32),
                Field('leader_epoch', INT32, versions='7+', default=-1, ignorable=True),
                Field('replica_nodes', ARRAY, item=INT32),
                Field('isr_nodes', ARRAY, item=INT32),
                Field('offline_replicas', ARRAY, versions='5+', item=INT32, ignorable=True),
            ]),
            Field('topic_authorized_operations', INT32, versions='8+', default=-2147483648),
        ]),
        Field('cluster_authorized_operations', INT32, versions='8-10', default=-2147483648),
        Field('error_code', INT16, versions='13+', ignorable=True),
    ],
)
