# Generated from Kafka's JSON message definitions (SaslHandshakeRequest.json, SaslHandshakeResponse.json) by tools/gen_protocol.py.
# DO NOT EDIT BY HAND: edit tools/gen_protocol.py and rerun it.
"""Kafka API 17, SaslHandshake: the request and response tables."""
from __future__ import annotations

from rafka.net.protocol.schema import Api, Field, ARRAY, INT16, STRING

# SaslHandshakeRequest (validVersions 0-1, flexibleVersions none):
# Version 1 supports SASL_AUTHENTICATE.
# NOTE: Version cannot be easily bumped due to incorrect
# client negotiation for clients <= 2.4.
# See https://issues.apache.org/jira/browse/KAFKA-9577
# SaslHandshakeResponse:
# Version 1 is the same as version 0.
# NOTE: Version cannot be easily bumped due to incorrect
# client negotiation for clients <= 2.4.
# See https://issues.apache.org/jira/browse/KAFKA-9577
SASL_HANDSHAKE = Api(
    key=17,
    name='SaslHandshake',
    versions=(0, 1),
    json_versions=(0, 1),
    flexible_from=None,
    request=[
        Field('mechanism', STRING),
    ],
    response=[
        Field('error_code', INT16),
        Field('mechanisms', ARRAY, item=STRING),
    ],
)
