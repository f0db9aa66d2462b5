# Generated from Kafka's JSON message definitions (ListOffsetsRequest.json, ListOffsetsResponse.json) by tools/gen_protocol.py.
# DO NOT EDIT BY HAND: edit tools/gen_protocol.py and rerun it.
"""Kafka API 2, ListOffsets: the request and response tables."""
from __future__ import annotations

from rafka.net.protocol.schema import Api, Field, ARRAY, INT16, INT32, INT64, INT8, STRING

# ListOffsetsRequest (validVersions 1-11, flexibleVersions 6+):
# Version 0 was removed in Apache Kafka 4.0, Version 1 is the new baseline.
#
# Version 1 removes MaxNumOffsets.  From this version forward, only a single
# offset can be returned.
#
# Version 2 adds the isolation level, which is used for transactional reads.
#
# Version 3 is the same as version 2.
#
# Version 4 adds the current leader epoch, which is used for fencing.
#
# Version 5 is the same as version 4.
#
# Version 6 enables flexible versions.
#
# Version 7 enables listing offsets by max timestamp (KIP-734).
#
# Version 8 enables listing offsets by local log start offset (KIP-405).
#
# Version 9 enables listing offsets by last tiered offset (KIP-1005).
#
# Version 10 enables async remote list offsets support (KIP-1075)
#
# Version 11 enables listing offsets by earliest pending upload offset (KIP-1023)
# ListOffsetsResponse:
# Version 0 was removed in Apache Kafka 4.0, Version 1 is the new baseline.
#
# Version 1 removes the offsets array in favor of returning a single offset.
# Version 1 also adds the timestamp associated with the returned offset.
#
# Version 2 adds the throttle time.
#
# Starting in version 3, on quota violation, brokers send out responses before throttling.
#
# Version 4 adds the leader epoch, which is used for fencing.
#
# Version 5 adds a new error code, OFFSET_NOT_AVAILABLE.
#
# Version 6 enables flexible versions.
#
# Version 7 is the same as version 6 (KIP-734).
#
# Version 8 enables listing offsets by local log start offset.
# This is the earliest log start offset in the local log. (KIP-405).
#
# Version 9 enables listing offsets by last tiered offset (KIP-1005).
#
# Version 10 enables async remote list offsets support (KIP-1075)
#
# Version 11 enables listing offsets by earliest pending upload offset (KIP-1023)
LIST_OFFSETS = Api(
    key=2,
    name='ListOffsets',
    versions=(1, 8),
    json_versions=(1, 11),
    flexible_from=6,
    request=[
        Field('replica_id', INT32),
        Field('isolation_level', INT8, versions='2+'),
        Field('topics', ARRAY, struct_name='ListOffsetsTopic', fields=[
            Field('name', STRING),
            Field('partitions', ARRAY, struct_name='ListOffsetsPartition', fields=[
                Field('partition_index', INT32),
                Field('current_leader_epoch', INT32, versions='4+', default=-1, ignorable=True),
                Field('timestamp', INT64),
                Field('max_num_offsets', INT32, versions='0', default=1),
            ]),
        ]),
        Field('timeout_ms', INT32, versions='10+', ignorable=True),
    ],
    response=[
        Field('throttle_time_ms', INT32, versions='2+', ignorable=True),
        Field('topics', ARRAY, struct_name='ListOffsetsTopicResponse', fields=[
            Field('name', STRING),
            Field('partitions', ARRAY, struct_name='ListOffsetsPartitionResponse', fields=[
                Field('partition_index', INT32),
                Field('error_code', INT16),
                Field('old_style_offsets', ARRAY, versions='0', item=INT64),
                Field('timestamp', INT64, versions='1+', default=-1),
                Field('offset', INT64, versions='1+', default=-1),
                Field('leader_epoch', INT32, versions='4+', default=-1),
            ]),
        ]),
    ],
)
