# Generated from Kafka's JSON message definitions (AddOffsetsToTxnRequest.json, AddOffsetsToTxnResponse.json) by tools/gen_protocol.py.
# DO NOT EDIT BY HAND: edit tools/gen_protocol.py and rerun it.
"""Kafka API 25, AddOffsetsToTxn: the request and response tables."""
from __future__ import annotations

from rafka.net.protocol.schema import Api, Field, INT16, INT32, INT64, STRING

# AddOffsetsToTxnRequest (validVersions 0-4, flexibleVersions 3+):
# Version 1 is the same as version 0.
#
# Version 2 adds the support for new error code PRODUCER_FENCED.
#
# Version 3 enables flexible versions.
#
# Version 4 adds support for new error code TRANSACTION_ABORTABLE (KIP-890).
# AddOffsetsToTxnResponse:
# Starting in version 1, on quota violation brokers send out responses before throttling.
#
# Version 2 adds the support for new error code PRODUCER_FENCED.
#
# Version 3 enables flexible versions.
#
# Version 4 adds support for new error code TRANSACTION_ABORTABLE (KIP-890).
ADD_OFFSETS_TO_TXN = Api(
    key=25,
    name='AddOffsetsToTxn',
    versions=(0, 4),
    json_versions=(0, 4),
    flexible_from=3,
    request=[
        Field('transactional_id', STRING),
        Field('producer_id', INT64),
        Field('producer_epoch', INT16),
        Field('group_id', STRING),
    ],
    response=[
        Field('throttle_time_ms', INT32),
        Field('error_code', INT16),
    ],
)
