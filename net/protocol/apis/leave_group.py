# Generated from Kafka's JSON message definitions (LeaveGroupRequest.json, LeaveGroupResponse.json) by tools/gen_protocol.py.
# DO NOT EDIT BY HAND: edit tools/gen_protocol.py and rerun it.
"""Kafka API 13, LeaveGroup: the request and response tables."""
from __future__ import annotations

from rafka.net.protocol.schema import Api, Field, ARRAY, INT16, INT32, STRING

# LeaveGroupRequest (validVersions 0-5, flexibleVersions 4+):
# Version 1 and 2 are the same as version 0.
#
# Version 3 defines batch processing scheme with group.instance.id + member.id for identity
#
# Version 4 is the first flexible version.
#
# Version 5 adds the Reason field (KIP-800).
# LeaveGroupResponse:
# Version 1 adds the throttle time.
#
# Starting in version 2, on quota violation, brokers send out responses before throttling.
#
# Starting in version 3, we will make leave group request into batch mode and add group.instance.id.
#
# Version 4 is the first flexible version.
#
# Version 5 is the same as version 4.
LEAVE_GROUP = Api(
    key=13,
    name='LeaveGroup',
    versions=(0, 5),
    json_versions=(0, 5),
    flexible_from=4,
    request=[
        Field('group_id', STRING),
        Field('member_id', STRING, versions='0-2'),
        Field('members', ARRAY, versions='3+', struct_name='MemberIdentity', fields=[
            Field('member_id', STRING, versions='3+'),
            Field('group_instance_id', STRING, versions='3+', nullable='3+', default=None),
            Field('reason', STRING, versions='5+', nullable='5+', default=None, ignorable=True),
        ]),
    ],
    response=[
        Field('throttle_time_ms', INT32, versions='1+', ignorable=True),
        Field('error_code', INT16),
        Field('members', ARRAY, versions='3+', struct_name='MemberResponse', fields=[
            Field('member_id', STRING, versions='3+'),
            Field('group_instance_id', STRING, versions='3+', nullable='3+'),
            Field('error_code', INT16, versions='3+'),
        ]),
    ],
)
