# Generated from Kafka's JSON message definitions (DeleteRecordsRequest.json, DeleteRecordsResponse.json) by tools/gen_protocol.py.
# DO NOT EDIT BY HAND: edit tools/gen_protocol.py and rerun it.
"""Kafka API 21, DeleteRecords: the request and response tables."""
from __future__ import annotations

from rafka.net.protocol.schema import Api, Field, ARRAY, INT16, INT32, INT64, STRING

# DeleteRecordsRequest (validVersions 0-2, flexibleVersions 2+):
# Version 1 is the same as version 0.
# Version 2 is the first flexible version.
# DeleteRecordsResponse:
# Starting in version 1, on quota violation, brokers send out responses before throttling.
# Version 2 is the first flexible version.
DELETE_RECORDS = Api(
    key=21,
    name='DeleteRecords',
    versions=(0, 2),
    json_versions=(0, 2),
    flexible_from=2,
    request=[
        Field('topics', ARRAY, struct_name='DeleteRecordsTopic', fields=[
            Field('name', STRING),
            Field('partitions', ARRAY, struct_name='DeleteRecordsPartition', fields=[
                Field('partition_index', INT32),
                Field('offset', INT64),
            ]),
        ]),
        Field('timeout_ms', INT32),
    ],
    response=[
        Field('throttle_time_ms', INT32),
        Field('topics', ARRAY, struct_name='DeleteRecordsTopicResult', fields=[
            Field('name', STRING),
            Field('partitions', ARRAY, struct_name='DeleteRecordsPartitionResult', fields=[
                Field('partition_index', INT32),
                Field('low_watermark', INT64),
                Field('error_code', INT16),
            ]),
        ]),
    ],
)
