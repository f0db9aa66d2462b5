"""Kafka's error codes and the exceptions that carry them: one table, one mapping point.

Expected outcomes travel as values (per-partition results with an `ErrorCode`); an
exception that crosses an actor boundary means a bug or a lost process. `net/` turns
a `KafkaError` into its code in one place.
"""
from __future__ import annotations

from enum import IntEnum


class ErrorCode(IntEnum):
    """Kafka's error codes, names and numbers as in Apache Kafka 3.9 (`Errors.java`)."""

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    BROKER_NOT_AVAILABLE = 8
    REPLICA_NOT_AVAILABLE = 9
    MESSAGE_TOO_LARGE = 10
    STALE_CONTROLLER_EPOCH = 11
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    INVALID_TIMESTAMP = 32
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
    POLICY_VIOLATION = 44
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_TXN_STATE = 48
    INVALID_PRODUCER_ID_MAPPING = 49
    INVALID_TRANSACTION_TIMEOUT = 50
    CONCURRENT_TRANSACTIONS = 51
    TRANSACTION_COORDINATOR_FENCED = 52
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
    SECURITY_DISABLED = 54
    OPERATION_NOT_ATTEMPTED = 55
    KAFKA_STORAGE_ERROR = 56
    LOG_DIR_NOT_FOUND = 57
    SASL_AUTHENTICATION_FAILED = 58
    UNKNOWN_PRODUCER_ID = 59
    REASSIGNMENT_IN_PROGRESS = 60
    DELEGATION_TOKEN_AUTH_DISABLED = 61
    DELEGATION_TOKEN_NOT_FOUND = 62
    DELEGATION_TOKEN_OWNER_MISMATCH = 63
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = 64
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = 65
    DELEGATION_TOKEN_EXPIRED = 66
    INVALID_PRINCIPAL_TYPE = 67
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    FETCH_SESSION_ID_NOT_FOUND = 70
    INVALID_FETCH_SESSION_EPOCH = 71
    LISTENER_NOT_FOUND = 72
    TOPIC_DELETION_DISABLED = 73
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    UNSUPPORTED_COMPRESSION_TYPE = 76
    STALE_BROKER_EPOCH = 77
    OFFSET_NOT_AVAILABLE = 78
    MEMBER_ID_REQUIRED = 79
    PREFERRED_LEADER_NOT_AVAILABLE = 80
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
    ELECTION_NOT_NEEDED = 84
    NO_REASSIGNMENT_IN_PROGRESS = 85
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    INVALID_RECORD = 87
    UNSTABLE_OFFSET_COMMIT = 88
    THROTTLING_QUOTA_EXCEEDED = 89
    PRODUCER_FENCED = 90
    RESOURCE_NOT_FOUND = 91
    DUPLICATE_RESOURCE = 92
    UNACCEPTABLE_CREDENTIAL = 93
    INCONSISTENT_VOTER_SET = 94
    INVALID_UPDATE_VERSION = 95
    FEATURE_UPDATE_FAILED = 96
    PRINCIPAL_DESERIALIZATION_FAILURE = 97
    SNAPSHOT_NOT_FOUND = 98
    POSITION_OUT_OF_RANGE = 99
    UNKNOWN_TOPIC_ID = 100
    DUPLICATE_BROKER_REGISTRATION = 101
    BROKER_ID_NOT_REGISTERED = 102
    INCONSISTENT_TOPIC_ID = 103
    INCONSISTENT_CLUSTER_ID = 104
    TRANSACTIONAL_ID_NOT_FOUND = 105
    FETCH_SESSION_TOPIC_ID_ERROR = 106
    INELIGIBLE_REPLICA = 107
    NEW_LEADER_ELECTED = 108
    MISMATCHED_ENDPOINT_TYPE = 114
    UNSUPPORTED_ENDPOINT_TYPE = 115
    TRANSACTION_ABORTABLE = 120


class KafkaError(Exception):
    """Base of every error that maps to a Kafka error code."""

    code: ErrorCode = ErrorCode.UNKNOWN_SERVER_ERROR
    # Produce's per-record errors, (batch index, message): Kafka's RecordValidationException.
    record_errors: tuple[tuple[int, str], ...] = ()

    def __init__(self, message: str = "", code: ErrorCode | None = None) -> None:
        super().__init__(message or self.__class__.__name__)
        if code is not None:
            self.code = code


class CorruptRecordError(KafkaError):
    """A record batch whose length, magic or CRC-32C is invalid."""

    code = ErrorCode.CORRUPT_MESSAGE


class InvalidRecordError(KafkaError):
    code = ErrorCode.INVALID_RECORD


class MessageTooLargeError(KafkaError):
    code = ErrorCode.MESSAGE_TOO_LARGE


class RecordBatchTooLargeError(KafkaError):
    """An append larger than a whole segment (Kafka's RecordBatchTooLargeException)."""

    code = ErrorCode.RECORD_LIST_TOO_LARGE


class UnsupportedCompressionTypeError(KafkaError):
    code = ErrorCode.UNSUPPORTED_COMPRESSION_TYPE


class OffsetOutOfRangeError(KafkaError):
    code = ErrorCode.OFFSET_OUT_OF_RANGE


class UnknownTopicOrPartitionError(KafkaError):
    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


class InvalidTopicError(KafkaError):
    code = ErrorCode.INVALID_TOPIC_EXCEPTION


class TopicAlreadyExistsError(KafkaError):
    code = ErrorCode.TOPIC_ALREADY_EXISTS


class InvalidPartitionsError(KafkaError):
    code = ErrorCode.INVALID_PARTITIONS


class InvalidReplicationFactorError(KafkaError):
    code = ErrorCode.INVALID_REPLICATION_FACTOR


class InvalidConfigError(KafkaError):
    code = ErrorCode.INVALID_CONFIG


class InvalidRequestError(KafkaError):
    code = ErrorCode.INVALID_REQUEST


class UnsupportedVersionError(KafkaError):
    code = ErrorCode.UNSUPPORTED_VERSION


class NotLeaderOrFollowerError(KafkaError):
    code = ErrorCode.NOT_LEADER_OR_FOLLOWER


class StaleControllerEpochError(KafkaError):
    code = ErrorCode.STALE_CONTROLLER_EPOCH


class KafkaStorageError(KafkaError):
    """A log on a failed (offline) log dir: a write hit an I/O error (ENOSPC, EIO, EROFS), and
    the log takes no more writes (Kafka's KafkaStorageException, KAFKA_STORAGE_ERROR)."""

    code = ErrorCode.KAFKA_STORAGE_ERROR


class StartupError(Exception):
    """A broker cannot start (live duplicate broker id, unusable log dir, bad config).

    Not a Kafka error code: the CLI prints the message and exits 1.
    """


class InvalidTimestampError(KafkaError):
    """CreateTime timestamps outside message.timestamp.before/after.max.ms (INVALID_TIMESTAMP);
    `record_errors` names each refused record by its index in the batch, as Kafka does."""

    code = ErrorCode.INVALID_TIMESTAMP

    def __init__(self, message: str = "", record_errors: tuple[tuple[int, str], ...] = ()) -> None:
        super().__init__(message)
        self.record_errors = tuple(record_errors)


class GroupIdNotFoundError(KafkaError):
    code = ErrorCode.GROUP_ID_NOT_FOUND


class NonEmptyGroupError(KafkaError):
    code = ErrorCode.NON_EMPTY_GROUP


class ClusterNotFoundError(LookupError):
    """No rafka cluster runs in the Ray namespace asked for (`rafka.Cluster.connect`).

    Not a Kafka error code: Kafka has no word for a cluster that is not there."""


def error_for(code: int, message: str = "") -> KafkaError:
    """The exception of Kafka error `code`: the class above that carries it (Kafka's own name,
    `UnknownTopicOrPartitionError` for UNKNOWN_TOPIC_OR_PARTITION), else a `KafkaError` with
    that code. `message` defaults to the code's name."""
    code = ErrorCode(code)
    classes = [KafkaError]
    for cls in classes:
        classes.extend(cls.__subclasses__())
    exact = [cls for cls in classes[1:] if cls.code == code]
    text = message or code.name
    if exact:
        return exact[0](text)
    return KafkaError(text, code)
