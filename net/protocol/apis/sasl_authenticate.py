# Generated from Kafka's JSON message definitions (SaslAuthenticateRequest.json, SaslAuthenticateResponse.json) by tools/gen_protocol.py.
# DO NOT EDIT BY HAND: edit tools/gen_protocol.py and rerun it.
"""Kafka API 36, SaslAuthenticate: the request and response tables."""
from __future__ import annotations

from rafka.net.protocol.schema import Api, Field, BYTES, INT16, INT64, STRING

# SaslAuthenticateRequest (validVersions 0-2, flexibleVersions 2+):
# Version 1 is the same as version 0.
# Version 2 adds flexible version support
# SaslAuthenticateResponse:
# Version 1 adds the session lifetime.
# Version 2 adds flexible version support
SASL_AUTHENTICATE = Api(
    key=36,
    name='SaslAuthenticate',
    versions=(0, 2),
    json_versions=(0, 2),
    flexible_from=2,
    request=[
        Field('auth_bytes', BYTES),
    ],
    response=[
        Field('error_code', INT16),
        Field('error_message', STRING, nullable='0+'),
        Field('auth_bytes', BYTES),
        Field('session_lifetime_ms', INT64, versions='1+', default=0, ignorable=True),
    ],
)
