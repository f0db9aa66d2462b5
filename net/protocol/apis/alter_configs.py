# Generated from Kafka's JSON message definitions (AlterConfigsRequest.json, AlterConfigsResponse.json) by tools/gen_protocol.py.
# DO NOT EDIT BY HAND: edit tools/gen_protocol.py and rerun it.
"""Kafka API 33, AlterConfigs: the request and response tables."""
from __future__ import annotations

from rafka.net.protocol.schema import Api, Field, ARRAY, BOOL, INT16, INT32, INT8, STRING

# AlterConfigsRequest (validVersions 0-2, flexibleVersions 2+):
# Version 1 is the same as version 0.
# Version 2 enables flexible versions.
# AlterConfigsResponse:
# Starting in version 1, on quota violation brokers send out responses before throttling.
# Version 2 enables flexible versions.
ALTER_CONFIGS = Api(
    key=33,
    name='AlterConfigs',
    versions=(0, 2),
    json_versions=(0, 2),
    flexible_from=2,
    request=[
        Field('resources', ARRAY, struct_name='AlterConfigsResource', fields=[
            Field('resource_type', INT8),
            Field('resource_name', STRING),
            Field('configs', ARRAY, struct_name='AlterableConfig', fields=[
                Field('name', STRING),
                Field('value', STRING, nullable='0+'),
            ]),
        ]),
        Field('validate_only', BOOL),
    ],
    response=[
        Field('throttle_time_ms', INT32),
        Field('responses', ARRAY, struct_name='AlterConfigsResourceResponse', fields=[
            Field('error_code', INT16),
            Field('error_message', STRING, nullable='0+'),
            Field('resource_type', INT8),
            Field('resource_name', STRING),
        ]),
    ],
)
