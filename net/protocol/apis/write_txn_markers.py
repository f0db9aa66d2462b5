# Generated from Kafka's JSON message definitions (WriteTxnMarkersRequest.json, WriteTxnMarkersResponse.json) by tools/gen_protocol.py.
# DO NOT EDIT BY HAND: edit tools/gen_protocol.py and rerun it.
"""Kafka API 27, WriteTxnMarkers: the request and response tables."""
from __future__ import annotations

from rafka.net.protocol.schema import Api, Field, ARRAY, BOOL, INT16, INT32, INT64, INT8, STRING

# WriteTxnMarkersRequest (validVersions 1-2, flexibleVersions 1+):
# Version 0 was removed in Apache Kafka 4.0, Version 1 is the new baseline.
#
# Version 1 enables flexible versions.
# Version 2 adds TransactionVersion field to the WritableTxnMarker (KIP-1228).
# WriteTxnMarkersResponse:
# Version 0 was removed in Apache Kafka 4.0, Version 1 is the new baseline.
#
# Version 1 enables flexible versions.
# Version 2 matches WriteTxnMarkersRequest version 2 (KIP-1228).
# NOTE: v0 (v1's fields, not flexible) restored: Kafka 3.9 serves it.
WRITE_TXN_MARKERS = Api(
    key=27,
    name='WriteTxnMarkers',
    versions=(0, 1),
    json_versions=(0, 2),
    flexible_from=1,
    request=[
        Field('markers', ARRAY, struct_name='WritableTxnMarker', fields=[
            Field('producer_id', INT64),
            Field('producer_epoch', INT16),
            Field('transaction_result', BOOL),
            Field('topics', ARRAY, struct_name='WritableTxnMarkerTopic', fields=[
                Field('name', STRING),
                Field('partition_indexes', ARRAY, item=INT32),
            ]),
            Field('coordinator_epoch', INT32),
            Field('transaction_version', INT8, versions='2+', default=0, ignorable=True),
        ]),
    ],
    response=[
        Field('markers', ARRAY, struct_name='WritableTxnMarkerResult', fields=[
            Field('producer_id', INT64),
            Field('topics', ARRAY, struct_name='WritableTxnMarkerTopicResult', fields=[
                Field('name', STRING),
                Field('partitions', ARRAY, struct_name='WritableTxnMarkerPartitionResult', fields=[
                    Field('partition_index', INT32),
                    Field('error_code', INT16),
                ]),
            ]),
        ]),
    ],
)
