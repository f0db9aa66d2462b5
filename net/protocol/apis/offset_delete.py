# Generated from Kafka's JSON message definitions (OffsetDeleteRequest.json, OffsetDeleteResponse.json) by tools/gen_protocol.py.
# DO NOT EDIT BY HAND: edit tools/gen_protocol.py and rerun it.
"""Kafka API 47, OffsetDelete: the request and response tables."""
from __future__ import annotations

from rafka.net.protocol.schema import Api, Field, ARRAY, INT16, INT32, STRING

OFFSET_DELETE = Api(
    key=47,
    name='OffsetDelete',
    versions=(0, 0),
    json_versions=(0, 0),
    flexible_from=None,
    request=[
        Field('group_id', STRING),
        Field('topics', ARRAY, struct_name='OffsetDeleteRequestTopic', fields=[
            Field('name', STRING),
            Field('partitions', ARRAY, struct_name='OffsetDeleteRequestPartition', fields=[
                Field('partition_index', INT32),
            ]),
        ]),
    ],
    response=[
        Field('error_code', INT16),
        Field('throttle_time_ms', INT32, ignorable=True),
        Field('topics', ARRAY, struct_name='OffsetDeleteResponseTopic', fields=[
            Field('name', STRING),
            Field('partitions', ARRAY, struct_name='OffsetDeleteResponsePartition', fields=[
                Field('partition_index', INT32),
                Field('error_code', INT16),
            ]),
        ]),
    ],
)
