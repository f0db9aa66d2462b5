# Generated from Kafka's JSON message definitions (ListGroupsRequest.json, ListGroupsResponse.json) by tools/gen_protocol.py.
# DO NOT EDIT BY HAND: edit tools/gen_protocol.py and rerun it.
"""Kafka API 16, ListGroups: the request and response tables."""
from __future__ import annotations

from rafka.net.protocol.schema import Api, Field, ARRAY, INT16, INT32, STRING

# ListGroupsRequest (validVersions 0-5, flexibleVersions 3+):
# Version 1 and 2 are the same as version 0.
#
# Version 3 is the first flexible version.
#
# Version 4 adds the StatesFilter field (KIP-518).
#
# Version 5 adds the TypesFilter field (KIP-848).
# ListGroupsResponse:
# Version 1 adds the throttle time.
#
# Starting in version 2, on quota violation, brokers send out
# responses before throttling.
#
# Version 3 is the first flexible version.
#
# Version 4 adds the GroupState field (KIP-518).
#
# Version 5 adds the GroupType field (KIP-848).
LIST_GROUPS = Api(
    key=16,
    name='ListGroups',
    versions=(0, 5),
    json_versions=(0, 5),
    flexible_from=3,
    request=[
        Field('states_filter', ARRAY, versions='4+', item=STRING),
        Field('types_filter', ARRAY, versions='5+', item=STRING),
    ],
    response=[
        Field('throttle_time_ms', INT32, versions='1+', ignorable=True),
        Field('error_code', INT16),
        Field('groups', ARRAY, struct_name='ListedGroup', fields=[
            Field('group_id', STRING),
            Field('protocol_type', STRING),
            Field('group_state', STRING, versions='4+', ignorable=True),
            Field('group_type', STRING, versions='5+', ignorable=True),
        ]),
    ],
)
