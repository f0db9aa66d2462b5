# Generated from Kafka's JSON message definitions (DescribeGroupsRequest.json, DescribeGroupsResponse.json) by tools/gen_protocol.py.
# DO NOT EDIT BY HAND: edit tools/gen_protocol.py and rerun it.
"""Kafka API 15, DescribeGroups: the request and response tables."""
from __future__ import annotations

from rafka.net.protocol.schema import Api, Field, ARRAY, BOOL, BYTES, INT16, INT32, STRING

# DescribeGroupsRequest (validVersions 0-6, flexibleVersions 5+):
# Versions 1 and 2 are the same as version 0.
#
# Starting in version 3, authorized operations can be requested.
#
# Starting in version 4, the response will include group.instance.id info for members.
#
# Version 5 is the first flexible version.
#
# Version 6 returns error code GROUP_ID_NOT_FOUND if the group ID is not found (KIP-1043).
# DescribeGroupsResponse:
# Version 1 added throttle time.
#
# Starting in version 2, on quota violation, brokers send out responses before throttling.
#
# Starting in version 3, brokers can send authorized operations.
#
# Starting in version 4, the response will optionally include group.instance.id info for members.
#
# Version 5 is the first flexible version.
#
# Version 6 returns error code GROUP_ID_NOT_FOUND if the group ID is not found (KIP-1043).
DESCRIBE_GROUPS = Api(
    key=15,
    name='DescribeGroups',
    versions=(0, 5),
    json_versions=(0, 6),
    flexible_from=5,
    request=[
        Field('groups', ARRAY, item=STRING),
        Field('include_authorized_operations', BOOL, versions='3+'),
    ],
    response=[
        Field('throttle_time_ms', INT32, versions='1+', ignorable=True),
        Field('groups', ARRAY, struct_name='DescribedGroup', fields=[
            Field('error_code', INT16),
            Field('error_message', STRING, versions='6+', nullable='6+', default=None),
            Field('group_id', STRING),
            Field('group_state', STRING),
            Field('protocol_type', STRING),
            # ProtocolData is currently only filled in if the group state is in the Stable state.
            Field('protocol_data', STRING),
            # N.B. If the group is in the Dead state, the members array will always be empty.
            Field('members', ARRAY, struct_name='DescribedGroupMember', fields=[
                Field('member_id', STRING),
                Field('group_instance_id', STRING, versions='4+', nullable='4+', default=None, ignorable=True),
                Field('client_id', STRING),
                Field('client_host', STRING),
                # This is currently only provided if the group is in the Stable state.
                Field('member_metadata', BYTES),
                # This is currently only provided if the group is in the Stable state.
                Field('member_assignment', BYTES),
            ]),
            Field('authorized_operations', INT32, versions='3+', default=-2147483648),
        ]),
    ],
)
