# Generated from Kafka's JSON message definitions (DescribeConfigsRequest.json, DescribeConfigsResponse.json) by tools/gen_protocol.py.
# DO NOT EDIT BY HAND: edit tools/gen_protocol.py and rerun it.
"""Kafka API 32, DescribeConfigs: the request and response tables."""
from __future__ import annotations

from rafka.net.protocol.schema import Api, Field, ARRAY, BOOL, INT16, INT32, INT8, STRING

# DescribeConfigsRequest (validVersions 1-4, flexibleVersions 4+):
# Version 0 was removed in Apache Kafka 4.0, Version 1 is the new baseline.
# Version 1 adds IncludeSynonyms and removes IsDefault.
# Version 2 is the same as version 1.
# Version 4 enables flexible versions.
# DescribeConfigsResponse:
# Version 0 was removed in Apache Kafka 4.0, Version 1 is the new baseline.
# Version 1 adds ConfigSource and the synonyms.
# Starting in version 2, on quota violation, brokers send out responses before throttling.
# Version 4 enables flexible versions.
DESCRIBE_CONFIGS = Api(
    key=32,
    name='DescribeConfigs',
    versions=(1, 4),
    json_versions=(1, 4),
    flexible_from=4,
    request=[
        Field('resources', ARRAY, struct_name='DescribeConfigsResource', fields=[
            Field('resource_type', INT8),
            Field('resource_name', STRING),
            Field('configuration_keys', ARRAY, nullable='0+', item=STRING),
        ]),
        Field('include_synonyms', BOOL, versions='1+', default=False),
        Field('include_documentation', BOOL, versions='3+', default=False),
    ],
    response=[
        Field('throttle_time_ms', INT32),
        Field('results', ARRAY, struct_name='DescribeConfigsResult', fields=[
            Field('error_code', INT16),
            Field('error_message', STRING, nullable='0+'),
            Field('resource_type', INT8),
            Field('resource_name', STRING),
            Field('configs', ARRAY, struct_name='DescribeConfigsResourceResult', fields=[
                Field('name', STRING),
                Field('value', STRING, nullable='0+'),
                Field('read_only', BOOL),
                Field('config_source', INT8, versions='1+', default=-1, ignorable=True),
                Field('is_default', BOOL, versions='0'),
                Field('is_sensitive', BOOL),
                Field('synonyms', ARRAY, versions='1+', ignorable=True, struct_name='DescribeConfigsSynonym', fields=[
                    Field('name', STRING, versions='1+'),
                    Field('value', STRING, versions='1+', nullable='0+'),
                    Field('source', INT8, versions='1+'),
                ]),
                Field('config_type', INT8, versions='3+', default=0, ignorable=True),
                Field('documentation', STRING, versions='3+', nullable='0+', ignorable=True),
            ]),
        ]),
    ],
)
