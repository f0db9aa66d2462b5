# Generated from Kafka's JSON message definitions (InitProducerIdRequest.json, InitProducerIdResponse.json) by tools/gen_protocol.py.
# DO NOT EDIT BY HAND: edit tools/gen_protocol.py and rerun it.
"""Kafka API 22, InitProducerId: the request and response tables."""
from __future__ import annotations

from rafka.net.protocol.schema import Api, Field, BOOL, INT16, INT32, INT64, STRING

# InitProducerIdRequest (validVersions 0-6, flexibleVersions 2+):
# Version 1 is the same as version 0.
#
# Version 2 is the first flexible version.
#
# Version 3 adds ProducerId and ProducerEpoch, allowing producers to try to resume after an INVALID_PRODUCER_EPOCH error
#
# Version 4 adds the support for new error code PRODUCER_FENCED.
#
# Version 5 adds support for new error code TRANSACTION_ABORTABLE (KIP-890).
#
# Version 6 adds support for 2PC (KIP-939).
# InitProducerIdResponse:
# Starting in version 1, on quota violation, brokers send out responses before throttling.
#
# Version 2 is the first flexible version.
#
# Version 3 is the same as version 2.
#
# Version 4 adds the support for new error code PRODUCER_FENCED.
#
# Version 5 adds support for new error code TRANSACTION_ABORTABLE (KIP-890).
#
# Version 6 adds support for 2PC (KIP-939).
INIT_PRODUCER_ID = Api(
    key=22,
    name='InitProducerId',
    versions=(0, 5),
    json_versions=(0, 6),
    flexible_from=2,
    request=[
        Field('transactional_id', STRING, nullable='0+'),
        Field('transaction_timeout_ms', INT32),
        Field('producer_id', INT64, versions='3+', default=-1),
        Field('producer_epoch', INT16, versions='3+', default=-1),
        Field('enable2_pc', BOOL, versions='6+', default=False),
        Field('keep_prepared_txn', BOOL, versions='6+', default=False),
    ],
    response=[
        Field('throttle_time_ms', INT32, ignorable=True),
        Field('error_code', INT16),
        Field('producer_id', INT64, default=-1),
        Field('producer_epoch', INT16),
        Field('ongoing_txn_producer_id', INT64, versions='6+', default=-1),
        Field('ongoing_txn_producer_epoch', INT16, versions='6+', default=-1),
    ],
)
