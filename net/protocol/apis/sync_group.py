# Generated from Kafka's JSON message definitions (SyncGroupRequest.json, SyncGroupResponse.json) by tools/gen_protocol.py.
# DO NOT EDIT BY HAND: edit tools/gen_protocol.py and rerun it.
"""Kafka API 14, SyncGroup: the request and response tables."""
from __future__ import annotations

from rafka.net.protocol.schema import Api, Field, ARRAY, BYTES, INT16, INT32, STRING

# SyncGroupRequest (validVersions 0-5, flexibleVersions 4+):
# Versions 1 and 2 are the same as version 0.
#
# Starting from version 3, we add a new field called groupInstanceId to indicate member identity across restarts.
#
# Version 4 is the first flexible version.
#
# Starting from version 5, the client sends the Protocol Type and the Protocol Name
# to the broker (KIP-559). The broker will reject the request if they are inconsistent
# with the Type and Name known by the broker.
# SyncGroupResponse:
# Version 1 adds throttle time.
#
# Starting in version 2, on quota violation, brokers send out responses before throttling.
#
# Starting from version 3, syncGroupRequest supports a new field called groupInstanceId to indicate member identity across restarts.
#
# Version 4 is the first flexible version.
#
# Starting from version 5, the broker sends back the Protocol Type and the Protocol Name
# to the client (KIP-559).
SYNC_GROUP = Api(
    key=14,
    name='SyncGroup',
    versions=(0, 5),
    json_versions=(0, 5),
    flexible_from=4,
    request=[
        Field('group_id', STRING),
        Field('generation_id', INT32),
        Field('member_id', STRING),
        Field('group_instance_id', STRING, versions='3+', nullable='3+', default=None),
        Field('protocol_type', STRING, versions='5+', nullable='5+', default=None, ignorable=True),
        Field('protocol_name', STRING, versions='5+', nullable='5+', default=None, ignorable=True),
        Field('assignments', ARRAY, struct_name='SyncGroupRequestAssignment', fields=[
            Field('member_id', STRING),
            Field('assignment', BYTES),
        ]),
    ],
    response=[
        Field('throttle_time_ms', INT32, versions='1+', ignorable=True),
        Field('error_code', INT16),
        Field('protocol_type', STRING, versions='5+', nullable='5+', default=None, ignorable=True),
        Field('protocol_name', STRING, versions='5+', nullable='5+', default=None, ignorable=True),
        Field('assignment', BYTES),
    ],
)
