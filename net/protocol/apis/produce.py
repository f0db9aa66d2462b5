# Generated from Kafka's JSON message definitions (ProduceRequest.json, ProduceResponse.json) by tools/gen_protocol.py.
# DO NOT EDIT BY HAND: edit tools/gen_protocol.py and rerun it.
"""Kafka API 0, Produce: the request and response tables."""
from __future__ import annotations

from rafka.net.protocol.schema import Api, Field, ARRAY, INT16, INT32, INT64, RECORDS, STRING, STRUCT, UUID

# ProduceRequest (validVersions 3-13, flexibleVersions 9+):
# Versions 0-2 were removed in Apache Kafka 4.0, version 3 is the new baseline. Due to a bug in librdkafka,
# these versions have to be included in the api versions response (see KAFKA-18659), but are rejected otherwise.
# See `ApiKeys.PRODUCE_API_VERSIONS_RESPONSE_MIN_VERSION` for more details.
#
# Version 1 and 2 are the same as version 0.
#
# Version 3 adds the transactional ID, which is used for authorization when attempting to write
# transactional data.  Version 3 also adds support for Kafka Message Format v2.
#
# Version 4 is the same as version 3, but the requester must be prepared to handle a
# KAFKA_STORAGE_ERROR.
#
# Version 5 and 6 are the same as version 3.
#
# Starting in version 7, records can be produced using ZStandard compression.  See KIP-110.
#
# Starting in Version 8, response has RecordErrors and ErrorMessage. See KIP-467.
#
# Version 9 enables flexible versions.
#
# Version 10 is the same as version 9 (KIP-951).
#
# Version 11 adds support for new error code TRANSACTION_ABORTABLE (KIP-890).
#
# Version 12 is the same as version 11 (KIP-890). Note when produce requests are used in transaction, if
# transaction V2 (KIP_890 part 2) is enabled, the produce request will also include the function for a
# AddPartitionsToTxn call. If V2 is disabled, the client can't use produce request version higher than 11 within
# a transaction.
# Version 13 replaces topic names with topic IDs (KIP-516). May return UNKNOWN_TOPIC_ID error code.
# ProduceResponse:
# Versions 0-2 were removed in Apache Kafka 4.0, version 3 is the new baseline. Due to a bug in librdkafka,
# these versions have to be included in the api versions response (see KAFKA-18659), but are rejected otherwise.
# See `ApiKeys.PRODUCE_API_VERSIONS_RESPONSE_MIN_VERSION` for more details.
#
# Version 1 added the throttle time.
# Version 2 added the log append time.
#
# Version 3 is the same as version 2.
#
# Version 4 added KAFKA_STORAGE_ERROR as a possible error code.
#
# Version 5 added LogStartOffset to filter out spurious OutOfOrderSequenceExceptions on the client.
#
# Version 8 added RecordErrors and ErrorMessage to include information about
# records that cause the whole batch to be dropped.  See KIP-467 for details.
#
# Version 9 enables flexible versions.
#
# Version 10 adds 'CurrentLeader' and 'NodeEndpoints' as tagged fields (KIP-951)
#
# Version 11 adds support for new error code TRANSACTION_ABORTABLE (KIP-890).
#
# Version 12 is the same as version 10 (KIP-890).
# Version 13 replaces topic names with topic IDs (KIP-516). May return UNKNOWN_TOPIC_ID error code.
PRODUCE = Api(
    key=0,
    name='Produce',
    versions=(3, 11),
    json_versions=(3, 13),
    flexible_from=9,
    request=[
        Field('transactional_id', STRING, versions='3+', nullable='3+', default=None),
        Field('acks', INT16),
        Field('timeout_ms', INT32),
        Field('topic_data', ARRAY, struct_name='TopicProduceData', fields=[
            Field('name', STRING, versions='0-12', ignorable=True),
            Field('topic_id', UUID, versions='13+', ignorable=True),
            Field('partition_data', ARRAY, struct_name='PartitionProduceData', fields=[
                Field('index', INT32),
                Field('records', RECORDS, nullable='0+'),
            ]),
        ]),
    ],
    response=[
        Field('responses', ARRAY, struct_name='TopicProduceResponse', fields=[
            Field('name', STRING, versions='0-12', ignorable=True),
            Field('topic_id', UUID, versions='13+', ignorable=True),
            Field('partition_responses', ARRAY, struct_name='PartitionProduceResponse', fields=[
                Field('index', INT32),
                Field('error_code', INT16),
                Field('base_offset', INT64),
                Field('log_append_time_ms', INT64, versions='2+', default=-1, ignorable=True),
                Field('log_start_offset', INT64, versions='5+', default=-1, ignorable=True),
                Field('record_errors', ARRAY, versions='8+', ignorable=True, struct_name='BatchIndexAndErrorMessage', fields=[
                    Field('batch_index', INT32, versions='8+'),
                    Field('batch_index_error_message', STRING, versions='8+', nullable='8+', default=None),
                ]),
                Field('error_message', STRING, versions='8+', nullable='8+', default=None, ignorable=True),
                Field('current_leader', STRUCT, versions='10+', tag=0, tagged='10+', struct_name='LeaderIdAndEpoch', fields=[
                    Field('leader_id', INT32, versions='10+', default=-1),
                    Field('leader_epoch', INT32, versions='10+', default=-1),
                ]),
            ]),
        ]),
        Field('throttle_time_ms', INT32, versions='1+', default=0, ignorable=True),
        Field('node_endpoints', ARRAY, versions='10+', tag=0, tagged='10+', struct_name='NodeEndpoint', fields=[
            Field('node_id', INT32, versions='10+'),
            Field('host', STRING, versions='10+'),
            Field('port', INT32, versions='10+'),
            Field('rack', STRING, versions='10+', nullable='10+', default=None),
        ]),
    ],
)
