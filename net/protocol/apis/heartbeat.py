# Generated from Kafka's JSON message definitions (HeartbeatRequest.json, HeartbeatResponse.json) by tools/gen_protocol.py.
# DO NOT EDIT BY HAND: edit tools/gen_protocol.py and rerun it.
"""Kafka API 12, Heartbeat: the request and response tables."""
from __future__ import annotations

from rafka.net.protocol.schema import Api, Field, INT16, INT32, STRING

# HeartbeatRequest (validVersions 0-4, flexibleVersions 4+):
# Version 1 and version 2 are the same as version 0.
#
# Starting from version 3, we add a new field called groupInstanceId to indicate member identity across restarts.
#
# Version 4 is the first flexible version.
# HeartbeatResponse:
# Version 1 adds throttle time.
#
# Starting in version 2, on quota violation, brokers send out responses before throttling.
#
# Starting from version 3, heartbeatRequest supports a new field called groupInstanceId to indicate member identity across restarts.
#
# Version 4 is the first flexible version.
HEARTBEAT = Api(
    key=12,
    name='Heartbeat',
    versions=(0, 4),
    json_versions=(0, 4),
    flexible_from=4,
    request=[
        Field('group_id', STRING),
        Field('generation_id', INT32),
        Field('member_id', STRING),
        Field('group_instance_id', STRING, versions='3+', nullable='3+', default=None),
    ],
    response=[
        Field('throttle_time_ms', INT32, versions='1+', ignorable=True),
        Field('error_code', INT16),
    ],
)
