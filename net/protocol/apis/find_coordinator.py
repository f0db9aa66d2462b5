# Generated from Kafka's JSON message definitions (FindCoordinatorRequest.json, FindCoordinatorResponse.json) by tools/gen_protocol.py.
# DO NOT EDIT BY HAND: edit tools/gen_protocol.py and rerun it.
"""Kafka API 10, FindCoordinator: the request and response tables."""
from __future__ import annotations

from rafka.net.protocol.schema import Api, Field, ARRAY, INT16, INT32, INT8, STRING

# FindCoordinatorRequest (validVersions 0-6, flexibleVersions 3+):
# Version 1 adds KeyType.
#
# Version 2 is the same as version 1.
#
# Version 3 is the first flexible version.
#
# Version 4 adds support for batching via CoordinatorKeys (KIP-699)
#
# Version 5 adds support for new error code TRANSACTION_ABORTABLE (KIP-890).
#
# Version 6 adds support for share groups (KIP-932).
# For key type SHARE (2), the coordinator key format is "groupId:topicId:partition".
# FindCoordinatorResponse:
# Version 1 adds throttle time and error messages.
#
# Starting in version 2, on quota violation, brokers send out responses before throttling.
#
# Version 3 is the first flexible version.
#
# Version 4 adds support for batching via Coordinators (KIP-699)
#
# Version 5 adds support for new error code TRANSACTION_ABORTABLE (KIP-890).
#
# Version 6 adds support for share groups (KIP-932).
FIND_COORDINATOR = Api(
    key=10,
    name='FindCoordinator',
    versions=(0, 4),
    json_versions=(0, 6),
    flexible_from=3,
    request=[
        Field('key', STRING, versions='0-3'),
        Field('key_type', INT8, versions='1+', default=0),
        Field('coordinator_keys', ARRAY, versions='4+', item=STRING),
    ],
    response=[
        Field('throttle_time_ms', INT32, versions='1+', ignorable=True),
        Field('error_code', INT16, versions='0-3'),
        Field('error_message', STRING, versions='1-3', nullable='1-3', ignorable=True),
        Field('node_id', INT32, versions='0-3'),
        Field('host', STRING, versions='0-3'),
        Field('port', INT32, versions='0-3'),
        Field('coordinators', ARRAY, versions='4+', struct_name='Coordinator', fields=[
            Field('key', STRING, versions='4+'),
            Field('node_id', INT32, versions='4+'),
            Field('host', STRING, versions='4+'),
            Field('port', INT32, versions='4+'),
            Field('error_code', INT16, versions='4+'),
            Field('error_message', STRING, versions='4+', nullable='4+', ignorable=True),
        ]),
    ],
)
