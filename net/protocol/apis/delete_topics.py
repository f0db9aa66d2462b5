# Generated from Kafka's JSON message definitions (DeleteTopicsRequest.json, DeleteTopicsResponse.json) by tools/gen_protocol.py.
# DO NOT EDIT BY HAND: edit tools/gen_protocol.py and rerun it.
"""Kafka API 20, DeleteTopics: the request and response tables."""
from __future__ import annotations

from rafka.net.protocol.schema import Api, Field, ARRAY, INT16, INT32, STRING, UUID

# DeleteTopicsRequest (validVersions 1-6, flexibleVersions 4+):
# Version 0 was removed in Apache Kafka 4.0, Version 1 is the new baseline.
# Versions 0, 1, 2, and 3 are the same.
#
# Version 4 is the first flexible version.
#
# Version 5 adds ErrorMessage in the response and may return a THROTTLING_QUOTA_EXCEEDED error
# in the response if the topics deletion is throttled (KIP-599).
#
# Version 6 reorganizes topics, adds topic IDs and allows topic names to be null.
# DeleteTopicsResponse:
# Version 0 was removed in Apache Kafka 4.0, Version 1 is the new baseline.
#
# Version 1 adds the throttle time.
#
# Starting in version 2, on quota violation, brokers send out responses before throttling.
#
# Starting in version 3, a TOPIC_DELETION_DISABLED error code may be returned.
#
# Version 4 is the first flexible version.
#
# Version 5 adds ErrorMessage in the response and may return a THROTTLING_QUOTA_EXCEEDED error
# in the response if the topics deletion is throttled (KIP-599).
#
# Version 6 adds topic ID to responses. An UNSUPPORTED_VERSION error code will be returned when attempting to
# delete using topic IDs when IBP < 2.8. UNKNOWN_TOPIC_ID error code will be returned when IBP is at least 2.8, but
# the topic ID was not found.
DELETE_TOPICS = Api(
    key=20,
    name='DeleteTopics',
    versions=(1, 6),
    json_versions=(1, 6),
    flexible_from=4,
    request=[
        Field('topics', ARRAY, versions='6+', struct_name='DeleteTopicState', fields=[
            Field('name', STRING, versions='6+', nullable='6+', default=None),
            Field('topic_id', UUID, versions='6+'),
        ]),
        Field('topic_names', ARRAY, versions='0-5', item=STRING, ignorable=True),
        Field('timeout_ms', INT32),
    ],
    response=[
        Field('throttle_time_ms', INT32, versions='1+', ignorable=True),
        Field('responses', ARRAY, struct_name='DeletableTopicResult', fields=[
            Field('name', STRING, nullable='6+'),
            Field('topic_id', UUID, versions='6+', ignorable=True),
            Field('error_code', INT16),
            Field('error_message', STRING, versions='5+', nullable='5+', default=None, ignorable=True),
        ]),
    ],
)
