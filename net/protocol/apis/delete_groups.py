# Generated from Kafka's JSON message definitions (DeleteGroupsRequest.json, DeleteGroupsResponse.json) by tools/gen_protocol.py.
# DO NOT EDIT BY HAND: edit tools/gen_protocol.py and rerun it.
"""Kafka API 42, DeleteGroups: the request and response tables."""
from __future__ import annotations

from rafka.net.protocol.schema import Api, Field, ARRAY, INT16, INT32, STRING

# DeleteGroupsRequest (validVersions 0-2, flexibleVersions 2+):
# Version 1 is the same as version 0.
#
# Version 2 is the first flexible version.
# DeleteGroupsResponse:
# Starting in version 1, on quota violation, brokers send out responses before throttling.
#
# Version 2 is the first flexible version.
DELETE_GROUPS = Api(
    key=42,
    name='DeleteGroups',
    versions=(0, 2),
    json_versions=(0, 2),
    flexible_from=2,
    request=[
        Field('groups_names', ARRAY, item=STRING),
    ],
    response=[
        Field('throttle_time_ms', INT32),
        Field('results', ARRAY, struct_name='DeletableGroupResult', fields=[
            Field('group_id', STRING),
            Field('error_code', INT16),
        ]),
    ],
)
