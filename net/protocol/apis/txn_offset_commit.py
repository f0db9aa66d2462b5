# Generated from Kafka's JSON message definitions (TxnOffsetCommitRequest.json, TxnOffsetCommitResponse.json) by tools/gen_protocol.py.
# DO NOT EDIT BY HAND: edit tools/gen_protocol.py and rerun it.
"""Kafka API 28, TxnOffsetCommit: the request and response tables."""
from __future__ import annotations

from rafka.net.protocol.schema import Api, Field, ARRAY, INT16, INT32, INT64, STRING

# TxnOffsetCommitRequest (validVersions 0-5, flexibleVersions 3+):
# Version 1 is the same as version 0.
#
# Version 2 adds the committed leader epoch.
#
# Version 3 adds the member.id, group.instance.id and generation.id.
#
# Version 4 adds support for new error code TRANSACTION_ABORTABLE (KIP-890).
#
# Version 5 is the same as version 4 (KIP-890). Note when TxnOffsetCommit requests are used in transaction, if
# transaction V2 (KIP_890 part 2) is enabled, the TxnOffsetCommit request will also include the function for a
# AddOffsetsToTxn call. If V2 is disabled, the client can't use TxnOffsetCommit request version higher than 4 within
# a transaction.
# TxnOffsetCommitResponse:
# Starting in version 1, on quota violation, brokers send out responses before throttling.
#
# Version 2 is the same as version 1.
#
# Version 3 adds illegal generation, fenced instance id, and unknown member id errors.
#
# Version 4 adds support for new error code TRANSACTION_ABORTABLE (KIP-890).
#
# Version 5 is the same with version 3 (KIP-890).
TXN_OFFSET_COMMIT = Api(
    key=28,
    name='TxnOffsetCommit',
    versions=(0, 4),
    json_versions=(0, 5),
    flexible_from=3,
    request=[
        Field('transactional_id', STRING),
        Field('group_id', STRING),
        Field('producer_id', INT64),
        Field('producer_epoch', INT16),
        Field('generation_id', INT32, versions='3+', default=-1),
        Field('member_id', STRING, versions='3+', default=''),
        Field('group_instance_id', STRING, versions='3+', nullable='3+', default=None),
        Field('topics', ARRAY, struct_name='TxnOffsetCommitRequestTopic', fields=[
            Field('name', STRING),
            Field('partitions', ARRAY, struct_name='TxnOffsetCommitRequestPartition', fields=[
                Field('partition_index', INT32),
                Field('committed_offset', INT64),
                Field('committed_leader_epoch', INT32, versions='2+', default=-1, ignorable=True),
                Field('committed_metadata', STRING, nullable='0+'),
            ]),
        ]),
    ],
    response=[
        Field('throttle_time_ms', INT32),
        Field('topics', ARRAY, struct_name='TxnOffsetCommitResponseTopic', fields=[
            Field('name', STRING),
            Field('partitions', ARRAY, struct_name='TxnOffsetCommitResponsePartition', fields=[
                Field('partition_index', INT32),
                Field('error_code', INT16),
            ]),
        ]),
    ],
)
