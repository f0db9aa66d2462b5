# Generated from Kafka's JSON message definitions (ApiVersionsRequest.json, ApiVersionsResponse.json) by tools/gen_protocol.py.
# DO NOT EDIT BY HAND: edit tools/gen_protocol.py and rerun it.
"""Kafka API 18, ApiVersions: the request and response tables."""
from __future__ import annotations

from rafka.net.protocol.schema import Api, Field, ARRAY, BOOL, INT16, INT32, INT64, STRING

# ApiVersionsRequest (validVersions 0-4, flexibleVersions 3+):
# Versions 0 through 2 of ApiVersionsRequest are the same.
#
# Version 3 is the first flexible version and adds ClientSoftwareName and ClientSoftwareVersion.
#
# Version 4 fixes KAFKA-17011, which blocked SupportedFeatures.MinVersion in the response from being 0.
# ApiVersionsResponse:
# Version 1 adds throttle time to the response.
#
# Starting in version 2, on quota violation, brokers send out responses before throttling.
#
# Version 3 is the first flexible version. Tagged fields are only supported in the body but
# not in the header. The length of the header must not change in order to guarantee the
# backward compatibility.
#
# Starting from Apache Kafka 2.4 (KIP-511), ApiKeys field is populated with the supported
# versions of the ApiVersionsRequest when an UNSUPPORTED_VERSION error is returned.
#
# Version 4 fixes KAFKA-17011, which blocked SupportedFeatures.MinVersion from being 0.
API_VERSIONS = Api(
    key=18,
    name='ApiVersions',
    versions=(0, 4),
    json_versions=(0, 4),
    flexible_from=3,
    request=[
        Field('client_software_name', STRING, versions='3+', ignorable=True),
        Field('client_software_version', STRING, versions='3+', ignorable=True),
    ],
    response=[
        Field('error_code', INT16),
        Field('api_keys', ARRAY, struct_name='ApiVersion', fields=[
            Field('api_key', INT16),
            Field('min_version', INT16),
            Field('max_version', INT16),
        ]),
        Field('throttle_time_ms', INT32, versions='1+', ignorable=True),
        Field('supported_features', ARRAY, versions='3+', tag=0, tagged='3+', ignorable=True, struct_name='SupportedFeatureKey', fields=[
            Field('name', STRING, versions='3+'),
            Field('min_version', INT16, versions='3+'),
            Field('max_version', INT16, versions='3+'),
        ]),
        Field('finalized_features_epoch', INT64, versions='3+', tag=1, tagged='3+', default=-1, ignorable=True),
        Field('finalized_features', ARRAY, versions='3+', tag=2, tagged='3+', ignorable=True, struct_name='FinalizedFeatureKey', fields=[
            Field('name', STRING, versions='3+'),
            Field('max_version_level', INT16, versions='3+'),
            Field('min_version_level', INT16, versions='3+'),
        ]),
        Field('zk_migration_ready', BOOL, versions='3+', tag=3, tagged='3+', default=False, ignorable=True),
    ],
)
