# Generated from Kafka's JSON message definitions (DescribeLogDirsRequest.json, DescribeLogDirsResponse.json) by tools/gen_protocol.py.
# DO NOT EDIT BY HAND: edit tools/gen_protocol.py and rerun it.
"""Kafka API 35, DescribeLogDirs: the request and response tables."""
from __future__ import annotations

from rafka.net.protocol.schema import Api, Field, ARRAY, BOOL, INT16, INT32, INT64, STRING

# DescribeLogDirsRequest (validVersions 1-5, flexibleVersions 2+):
# Version 0 was removed in Apache Kafka 4.0, Version 1 is the new baseline.
# Version 1 is the same as version 0.
# Version 2 is the first flexible version.
# Version 3 is the same as version 2 (new field in response).
# Version 4 is the same as version 2 (new fields in response).
# Version 5 is the same as version 2 (new fields in response).
# DescribeLogDirsResponse:
# Version 0 was removed in Apache Kafka 4.0, Version 1 is the new baseline.
# Starting in version 1, on quota violation, brokers send out responses before throttling.
# Version 2 is the first flexible version.
# Version 3 adds the top-level ErrorCode field
# Version 4 adds the TotalBytes and UsableBytes fields
# Version 5 adds IsCordoned field
# NOTE: v0 (the same as v1) restored: Kafka 3.9 serves it.
DESCRIBE_LOG_DIRS = Api(
    key=35,
    name='DescribeLogDirs',
    versions=(0, 4),
    json_versions=(0, 5),
    flexible_from=2,
    request=[
        Field('topics', ARRAY, nullable='0+', struct_name='DescribableLogDirTopic', fields=[
            Field('topic', STRING),
            Field('partitions', ARRAY, item=INT32),
        ]),
    ],
    response=[
        Field('throttle_time_ms', INT32),
        Field('error_code', INT16, versions='3+', ignorable=True),
        Field('results', ARRAY, struct_name='DescribeLogDirsResult', fields=[
            Field('error_code', INT16),
            Field('log_dir', STRING),
            Field('topics', ARRAY, struct_name='DescribeLogDirsTopic', fields=[
                Field('name', STRING),
                Field('partitions', ARRAY, struct_name='DescribeLogDirsPartition', fields=[
                    Field('partition_index', INT32),
                    Field('partition_size', INT64),
                    Field('offset_lag', INT64),
                    Field('is_future_key', BOOL),
                ]),
            ]),
            Field('total_bytes', INT64, versions='4+', default=-1, ignorable=True),
            Field('usable_bytes', INT64, versions='4+', default=-1, ignorable=True),
            Field('is_cordoned', BOOL, versions='5+', default=False, ignorable=True),
        ]),
    ],
)
