# Generated from Kafka's JSON message definitions (JoinGroupRequest.json, JoinGroupResponse.json) by tools/gen_protocol.py.
# DO NOT EDIT BY HAND: edit tools/gen_protocol.py and rerun it.
"""Kafka API 11, JoinGroup: the request and response tables."""
from __future__ import annotations

from rafka.net.protocol.schema import Api, Field, ARRAY, BOOL, BYTES, INT16, INT32, STRING

# JoinGroupRequest (validVersions 0-9, flexibleVersions 6+):
# Version 1 adds RebalanceTimeoutMs. Version 2 and 3 are the same as version 1.
#
# Starting from version 4, the client needs to issue a second request to join group
#
# Starting from version 5, we add a new field called groupInstanceId to indicate member identity across restarts.
# with assigned id.
#
# Version 6 is the first flexible version.
#
# Version 7 is the same as version 6.
#
# Version 8 adds the Reason field (KIP-800).
#
# Version 9 is the same as version 8.
# JoinGroupResponse:
# Version 1 is the same as version 0.
#
# Version 2 adds throttle time.
#
# Starting in version 3, on quota violation, brokers send out responses before throttling.
#
# Starting in version 4, the client needs to issue a second request to join group
# with assigned id.
#
# Version 5 is bumped to apply group.instance.id to identify member across restarts.
#
# Version 6 is the first flexible version.
#
# Starting from version 7, the broker sends back the Protocol Type to the client (KIP-559).
#
# Version 8 is the same as version 7.
#
# Version 9 adds the SkipAssignment field.
JOIN_GROUP = Api(
    key=11,
    name='JoinGroup',
    versions=(0, 9),
    json_versions=(0, 9),
    flexible_from=6,
    request=[
        Field('group_id', STRING),
        Field('session_timeout_ms', INT32),
        # Note: if RebalanceTimeoutMs is not present, SessionTimeoutMs should be
        # used instead.  The default of -1 here is just intended as a placeholder.
        Field('rebalance_timeout_ms', INT32, versions='1+', default=-1, ignorable=True),
        Field('member_id', STRING),
        Field('group_instance_id', STRING, versions='5+', nullable='5+', default=None),
        Field('protocol_type', STRING),
        Field('protocols', ARRAY, struct_name='JoinGroupRequestProtocol', fields=[
            Field('name', STRING),
            Field('metadata', BYTES),
        ]),
        Field('reason', STRING, versions='8+', nullable='8+', default=None, ignorable=True),
    ],
    response=[
        Field('throttle_time_ms', INT32, versions='2+', ignorable=True),
        Field('error_code', INT16),
        Field('generation_id', INT32, default=-1),
        Field('protocol_type', STRING, versions='7+', nullable='7+', default=None, ignorable=True),
        Field('protocol_name', STRING, nullable='7+'),
        Field('leader', STRING),
        Field('skip_assignment', BOOL, versions='9+', default=False),
        Field('member_id', STRING),
        Field('members', ARRAY, struct_name='JoinGroupResponseMember', fields=[
            Field('member_id', STRING),
            Field('group_instance_id', STRING, versions='5+', nullable='5+', default=None, ignorable=True),
            Field('metadata', BYTES),
        ]),
    ],
)
