# Generated from Kafka's JSON message definitions (EndTxnRequest.json, EndTxnResponse.json) by tools/gen_protocol.py.
# DO NOT EDIT BY HAND: edit tools/gen_protocol.py and rerun it.
"""Kafka API 26, EndTxn: the request and response tables."""
from __future__ import annotations

from rafka.net.protocol.schema import Api, Field, BOOL, INT16, INT32, INT64, STRING

# EndTxnRequest (validVersions 0-5, flexibleVersions 3+):
# Version 1 is the same as version 0.
#
# Version 2 adds the support for new error code PRODUCER_FENCED.
#
# Version 3 enables flexible versions.
#
# Version 4 adds support for new error code TRANSACTION_ABORTABLE (KIP-890).
#
# Version 5 enables bumping epoch on every transaction (KIP-890 Part 2)
# EndTxnResponse:
# Starting in version 1, on quota violation, brokers send out responses before throttling.
#
# Version 2 adds the support for new error code PRODUCER_FENCED.
#
# Version 3 enables flexible versions.
#
# Version 4 adds support for new error code TRANSACTION_ABORTABLE (KIP-890).
#
# Version 5 enables bumping epoch on every transaction (KIP-890 Part 2), so producer ID and epoch are included in the response.
END_TXN = Api(
    key=26,
    name='EndTxn',
    versions=(0, 4),
    json_versions=(0, 5),
    flexible_from=3,
    request=[
        Field('transactional_id', STRING),
        Field('producer_id', INT64),
        Field('producer_epoch', INT16),
        Field('committed', BOOL),
    ],
    response=[
        Field('throttle_time_ms', INT32),
        Field('error_code', INT16),
        Field('producer_id', INT64, versions='5+', default=-1, ignorable=True),
        Field('producer_epoch', INT16, versions='5+', default=-1, ignorable=True),
    ],
)
