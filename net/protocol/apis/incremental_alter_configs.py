# Generated from Kafka's JSON message definitions (IncrementalAlterConfigsRequest.json, IncrementalAlterConfigsResponse.json) by tools/gen_protocol.py.
# DO NOT EDIT BY HAND: edit tools/gen_protocol.py and rerun it.
"""Kafka API 44, IncrementalAlterConfigs: the request and response tables."""
from __future__ import annotations

from rafka.net.protocol.schema import Api, Field, ARRAY, BOOL, INT16, INT32, INT8, STRING

# IncrementalAlterConfigsRequest (validVersions 0-1, flexibleVersions 1+):
# Version 1 is the first flexible version.
# IncrementalAlterConfigsResponse:
# Version 1 is the first flexible version.
INCREMENTAL_ALTER_CONFIGS = Api(
    key=44,
    name='IncrementalAlterConfigs',
    versions=(0, 1),
    json_versions=(0, 1),
    flexible_from=1,
    request=[
        Field('resources', ARRAY, struct_name='AlterConfigsResource', fields=[
            Field('resource_type', INT8),
            Field('resource_name', STRING),
            Field('configs', ARRAY, struct_name='AlterableConfig', fields=[
                Field('name', STRING),
                Field('config_operation', INT8),
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
