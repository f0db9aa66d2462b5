# Generated from Kafka's JSON message definitions (AddPartitionsToTxnRequest.json, AddPartitionsToTxnResponse.json) by tools/gen_protocol.py.
# DO NOT EDIT BY HAND: edit tools/gen_protocol.py and rerun it.
"""Kafka API 24, AddPartitionsToTxn: the request and response tables."""
from __future__ import annotations

from rafka.net.protocol.schema import Api, Field, ARRAY, BOOL, INT16, INT32, INT64, STRING

# AddPartitionsToTxnRequest (validVersions 0-5, flexibleVersions 3+):
# Version 1 is the same as version 0.
#
# Version 2 adds the support for new error code PRODUCER_FENCED.
#
# Version 3 enables flexible versions.
#
# Version 4 adds VerifyOnly field to check if partitions are already in transaction and adds support to batch multiple transactions.
#
# Version 5 adds support for new error code TRANSACTION_ABORTABLE (KIP-890).
# Versions 3 and below will be exclusively used by clients and versions 4 and above will be used by brokers.
# AddPartitionsToTxnResponse:
# Starting in version 1, on quota violation brokers send out responses before throttling.
#
# Version 2 adds the support for new error code PRODUCER_FENCED.
#
# Version 3 enables flexible versions.
#
# Version 4 adds support to batch multiple transactions and a top level error code.
#
# Version 5 adds support for new error code TRANSACTION_ABORTABLE (KIP-890).
ADD_PARTITIONS_TO_TXN = Api(
    key=24,
    name='AddPartitionsToTxn',
    versions=(0, 4),
    json_versions=(0, 5),
    flexible_from=3,
    request=[
        Field('transactions', ARRAY, versions='4+', struct_name='AddPartitionsToTxnTransaction', fields=[
            Field('transactional_id', STRING, versions='4+'),
            Field('producer_id', INT64, versions='4+'),
            Field('producer_epoch', INT16, versions='4+'),
            Field('verify_only', BOOL, versions='4+', default=False),
            Field('topics', ARRAY, versions='4+', struct_name='AddPartitionsToTxnTopic', fields=[
                Field('name', STRING),
                Field('partitions', ARRAY, item=INT32),
            ]),
        ]),
        Field('v3_and_below_transactional_id', STRING, versions='0-3'),
        Field('v3_and_below_producer_id', INT64, versions='0-3'),
        Field('v3_and_below_producer_epoch', INT16, versions='0-3'),
        Field('v3_and_below_topics', ARRAY, versions='0-3', struct_name='AddPartitionsToTxnTopic', fields=[
            Field('name', STRING),
            Field('partitions', ARRAY, item=INT32),
        ]),
    ],
    response=[
        Field('throttle_time_ms', INT32),
        Field('error_code', INT16, versions='4+', ignorable=True),
        Field('results_by_transaction', ARRAY, versions='4+', struct_name='AddPartitionsToTxnResult', fields=[
            Field('transactional_id', STRING, versions='4+'),
            Field('topic_results', ARRAY, versions='4+', struct_name='AddPartitionsToTxnTopicResult', fields=[
                Field('name', STRING),
                Field('results_by_partition', ARRAY, struct_name='AddPartitionsToTxnPartitionResult', fields=[
                    Field('partition_index', INT32),
                    Field('partition_error_code', INT16),
                ]),
            ]),
        ]),
        Field('results_by_topic_v3_and_below', ARRAY, versions='0-3', struct_name='AddPartitionsToTxnTopicResult', fields=[
            Field('name', STRING),
            Field('results_by_partition', ARRAY, struct_name='AddPartitionsToTxnPartitionResult', fields=[
                Field('partition_index', INT32),
                Field('partition_error_code', INT16),
            ]),
        ]),
    ],
)
