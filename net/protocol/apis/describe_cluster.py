# Generated from Kafka's JSON message definitions (DescribeClusterRequest.json, DescribeClusterResponse.json) by tools/gen_protocol.py.
# DO NOT EDIT BY HAND: edit tools/gen_protocol.py and rerun it.
"""Kafka API 60, DescribeCluster: the request and response tables."""
from __future__ import annotations

from rafka.net.protocol.schema import Api, Field, ARRAY, BOOL, INT16, INT32, INT8, STRING

# DescribeClusterRequest (validVersions 0-2, flexibleVersions 0+):
#
# Version 1 adds EndpointType for KIP-919 support.
# Version 2 adds IncludeFencedBrokers for KIP-1073 support.
#
# DescribeClusterResponse:
#
# Version 1 adds the EndpointType field, and makes MISMATCHED_ENDPOINT_TYPE and
# UNSUPPORTED_ENDPOINT_TYPE valid top-level response error codes.
# Version 2 adds IsFenced field to Brokers for KIP-1073 support.
#
DESCRIBE_CLUSTER = Api(
    key=60,
    name='DescribeCluster',
    versions=(0, 1),
    json_versions=(0, 2),
    flexible_from=0,
    request=[
        Field('include_cluster_authorized_operations', BOOL),
        Field('endpoint_type', INT8, versions='1+', default=1),
        Field('include_fenced_brokers', BOOL, versions='2+'),
    ],
    response=[
        Field('throttle_time_ms', INT32),
        Field('error_code', INT16),
        Field('error_message', STRING, nullable='0+', default=None),
        Field('endpoint_type', INT8, versions='1+', default=1),
        Field('cluster_id', STRING),
        Field('controller_id', INT32, default=-1),
        Field('brokers', ARRAY, struct_name='DescribeClusterBroker', fields=[
            Field('broker_id', INT32),
            Field('host', STRING),
            Field('port', INT32),
            Field('rack', STRING, nullable='0+', default=None),
            Field('is_fenced', BOOL, versions='2+'),
        ]),
        Field('cluster_authorized_operations', INT32, default=-2147483648),
    ],
)
