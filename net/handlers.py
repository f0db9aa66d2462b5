"""Kafka API handlers of a front end: decode a request, do the work, encode the answer.

Handlers see the broker through `BrokerServices` (metadata, local leader replicas, the
broker's coordinator), so they hold no Ray code and the mapping from exceptions to Kafka
error codes happens here, in one place. A front end serves only partitions led on its own
broker and answers NOT_LEADER_OR_FOLLOWER for the rest; it never forwards.
"""
from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any, Awaitable, Callable, Protocol

from rafka.common.errors import ErrorCode, UnsupportedVersionError
from rafka.common.types import INTERNAL_TOPICS, TopicPartition, topic_name_problem
from rafka.coordinator.messages import PartitionsSpec, TopicResult, TopicSpec
from rafka.common.metadata import ClusterMetadata
from rafka.net.auto_create import TopicAutoCreator
from rafka.net.config_handlers import CONFIG_APIS, ConfigApis
from rafka.net.data_plane import PendingRead, await_fetch
from rafka.net.group_handlers import GROUP_APIS, UNKNOWN_AUTHORIZED_OPERATIONS, GroupApis, RequestContext
from rafka.net.log_dir_handlers import LOG_DIR_APIS, LogDirApis
from rafka.net.protocol import apis, codec
from rafka.net.replication_handlers import REPLICATION_APIS, ReplicationApis
from rafka.net.routing import STARTING_WAIT_MS, leader_channel, once_started
from rafka.net.protocol.apis import APIS
from rafka.net.server import CloseConnection
from rafka.net.starting_leaders import StartingLeaders
from rafka.net.txn_handlers import TXN_APIS, TxnApis
from rafka.net.txn_marker_handlers import TXN_MARKER_APIS, TxnMarkerApis
from rafka.net.txn_produce import NO_VERIFICATION, TransactionVerifier, refusal, transactional_writes
from rafka.partition_worker.messages import FetchResult, ProduceResult

log = logging.getLogger(__name__)

# API keys, from the registry of the protocol tables.
API_VERSIONS, METADATA, PRODUCE, FETCH, LIST_OFFSETS = (
    apis.API_VERSIONS.key, apis.METADATA.key, apis.PRODUCE.key, apis.FETCH.key, apis.LIST_OFFSETS.key)
CREATE_TOPICS, DELETE_TOPICS, DELETE_RECORDS, INIT_PRODUCER_ID, DESCRIBE_CLUSTER = (
    apis.CREATE_TOPICS.key, apis.DELETE_TOPICS.key, apis.DELETE_RECORDS.key, apis.INIT_PRODUCER_ID.key,
    apis.DESCRIBE_CLUSTER.key)
CREATE_PARTITIONS = apis.CREATE_PARTITIONS.key
READ_COMMITTED = 1  # Fetch's and ListOffsets' isolation_level (0: read_uncommitted)
BROKER_ENDPOINT = 1  # DescribeCluster's EndpointType (KIP-919): 0 unknown, 1 broker, 2 controller
NULL_UUID = uuid.UUID(int=0)


class BrokerServices(Protocol):
    broker_id: int
    metadata: ClusterMetadata
    auto_create_topics: bool
    starting: StartingLeaders   # local leaders whose replica still starts

    def channel(self, tp: TopicPartition) -> Any | None:
        """The `ReplicaChannel` of the local leader of `tp`, or None."""

    async def create_topics(self, specs: list[TopicSpec], validate_only: bool,
                            timeout_ms: int) -> list[TopicResult]: ...

    async def delete_topics(self, names: list[str], timeout_ms: int) -> list[TopicResult]: ...

    async def create_partitions(self, specs: list[PartitionsSpec], validate_only: bool,
                                timeout_ms: int) -> list[TopicResult]: ...

    async def ensure_offsets_topic(self) -> None:
        """Create `__consumer_offsets` as the group coordinator wants it, if it is missing."""

    async def init_producer_id(self, producer_id: int, producer_epoch: int) -> tuple[ErrorCode, int, int]:
        """(error, producer id, epoch) for a producer without a transactional id."""


class FileRecords:
    """A fetch response's records as file regions: the server sends them with sendfile."""

    __slots__ = ("regions", "_length")

    def __init__(self, regions: tuple) -> None:
        self.regions = regions
        self._length = sum(r.length for r in regions)

    def __len__(self) -> int:
        return self._length


def _advertised_ranges() -> dict[int, tuple[int, int]]:
    """The versions each implemented API serves, from the protocol tables.

    Produce v0–v2 are advertised but refused when used, as Kafka does: librdkafka before
    2.11 stops compressing when Produce v0 is missing from the list (KAFKA-18659).
    """
    ranges = {key: APIS[key].versions for key in IMPLEMENTED}
    ranges[PRODUCE] = (0, ranges[PRODUCE][1])
    return ranges


IMPLEMENTED = (API_VERSIONS, METADATA, PRODUCE, FETCH, LIST_OFFSETS, CREATE_TOPICS, DELETE_TOPICS,
               DELETE_RECORDS, DESCRIBE_CLUSTER, CREATE_PARTITIONS, *GROUP_APIS, *CONFIG_APIS,
               *REPLICATION_APIS, *LOG_DIR_APIS, *TXN_MARKER_APIS, *TXN_APIS)


class RequestDispatcher:
    """Turns one request frame into response parts (see `net.server.RequestHandler`)."""

    def __init__(self, services: BrokerServices, verifier: TransactionVerifier = NO_VERIFICATION) -> None:
        """`verifier` confirms that a transactional batch's partition is in its producer's
        transaction (KIP-890 part 1; see `txn_produce`)."""
        self._services = services
        self._verifier = verifier
        self._ranges = _advertised_ranges()
        self._auto_creator = TopicAutoCreator(services, services.broker_id)
        self._handlers: dict[int, Callable[[int, dict], Awaitable[dict | None]]] = {
            API_VERSIONS: self._api_versions,
            METADATA: self._metadata,
            PRODUCE: self._produce,
            FETCH: self._fetch,
            LIST_OFFSETS: self._list_offsets,
            CREATE_TOPICS: self._create_topics,
            DELETE_TOPICS: self._delete_topics,
            DELETE_RECORDS: self._delete_records,
            DESCRIBE_CLUSTER: self._describe_cluster,
            CREATE_PARTITIONS: self._create_partitions,
        }
        # Group APIs also get who asked (client id, host): members are described with them.
        self._context_handlers = {**GroupApis(services).handlers(), **ConfigApis(services).handlers(),
                                 **ReplicationApis(services).handlers(), **LogDirApis(services).handlers(),
                                 **TxnMarkerApis(services).handlers(), **TxnApis(services, getattr(verifier, "verify_offsets", None)).handlers()}

    @property
    def advertised(self) -> dict[int, tuple[int, int]]:
        return dict(self._ranges)

    async def handle(self, frame: memoryview, peer: str) -> list | None:
        header, body_at = codec.decode_request_header(frame)
        key, version = header.api_key, header.api_version
        if key not in self._handlers and key not in self._context_handlers:
            raise CloseConnection(f"unknown or unsupported API key {key}")
        low, high = self._ranges[key]
        if key == API_VERSIONS and not low <= version <= high:
            # Answer in v0 with our ranges so the client downgrades (KIP-511).
            body = {"error_code": ErrorCode.UNSUPPORTED_VERSION, "api_keys": self._api_key_list()}
            return codec.encode_response(API_VERSIONS, 0, header.correlation_id, body)
        if not low <= version <= high or (key == PRODUCE and version < 3):
            raise CloseConnection(f"{APIS[key].name} v{version} is not supported (serving v{low}-{high})")
        try:
            body = codec.decode_request_body(frame, header, body_at)
        except UnsupportedVersionError as e:
            raise CloseConnection(str(e)) from e
        if key in self._context_handlers:
            context = RequestContext(header.client_id or "", "/" + peer.rpartition(":")[0])
            response = await self._context_handlers[key](version, body, context)
        else:
            response = await self._handlers[key](version, body)
        if response is None:
            return None
        return codec.encode_response(key, version, header.correlation_id, response)

    # -- ApiVersions -----------------------------------------------------------
    def _api_key_list(self) -> list[dict]:
        return [{"api_key": k, "min_version": lo, "max_version": hi} for k, (lo, hi) in sorted(self._ranges.items())]

    async def _api_versions(self, version: int, body: dict) -> dict:
        return {"error_code": 0, "api_keys": self._api_key_list(), "throttle_time_ms": 0}

    # -- Metadata --------------------------------------------------------------
    async def _metadata(self, version: int, body: dict) -> dict:
        services = self._services
        requested = body.get("topics")
        if version == 0 and requested == []:
            requested = None  # v0: an empty list means every topic
        auto_create = body.get("allow_auto_topic_creation", True) and services.auto_create_topics
        meta = services.metadata
        names: list[str]
        if requested is None:
            names = sorted(meta.topics)
        else:
            names = []
            for t in requested:
                name = t.get("name")
                if name is None and t.get("topic_id") not in (None, NULL_UUID):
                    info = meta.topic_by_id(t["topic_id"])
                    name = info.name if info else None
                if name is not None:
                    names.append(name)
            missing = [n for n in names if n not in meta.topics and topic_name_problem(n) is None]
            if missing and auto_create:
                # Answered at once, LEADER_NOT_AVAILABLE until the topic exists (Kafka's way):
                # waiting here would hold every later request of this connection.
                self._auto_creator.create(missing)
        topics = []
        for name in names:
            problem = topic_name_problem(name)
            info = meta.topics.get(name)
            if problem is not None:
                topics.append(self._topic_error(name, ErrorCode.INVALID_TOPIC_EXCEPTION))
            elif info is None:
                code = ErrorCode.LEADER_NOT_AVAILABLE if auto_create else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                topics.append(self._topic_error(name, code))
            else:
                partitions = []
                for p in sorted(info.partitions.values(), key=lambda p: p.partition):
                    code = ErrorCode.NONE if p.leader >= 0 else ErrorCode.LEADER_NOT_AVAILABLE
                    partitions.append({
                        "error_code": code, "partition_index": p.partition, "leader_id": p.leader,
                        "leader_epoch": p.leader_epoch, "replica_nodes": list(p.replicas),
                        "isr_nodes": list(p.isr), "offline_replicas": list(p.offline_replicas)})
                topics.append({"error_code": 0, "name": name, "topic_id": info.topic_id,
                               "is_internal": info.internal or name in INTERNAL_TOPICS,
                               "partitions": partitions,
                               "topic_authorized_operations": UNKNOWN_AUTHORIZED_OPERATIONS})
        brokers = [{"node_id": b.broker_id, "host": b.host, "port": b.port, "rack": b.rack}
                   for b in sorted(meta.brokers.values(), key=lambda b: b.broker_id)]
        return {"throttle_time_ms": 0, "brokers": brokers, "cluster_id": meta.cluster_id or None,
                "controller_id": meta.controller_id, "topics": topics,
                "cluster_authorized_operations": UNKNOWN_AUTHORIZED_OPERATIONS}

    # -- DescribeCluster ---------------------------------------------------------
    async def _describe_cluster(self, version: int, body: dict) -> dict:
        """The live brokers with their racks, the cluster id and the controller (Kafka's
        `AuthHelper.computeDescribeClusterResponse`): a broker answers only for endpoint type
        broker; a controller that is not among the live brokers is reported as -1."""
        meta = self._services.metadata
        endpoint_type = body.get("endpoint_type", BROKER_ENDPOINT)
        answer = {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
                  "endpoint_type": BROKER_ENDPOINT, "cluster_id": "", "controller_id": -1, "brokers": [],
                  "cluster_authorized_operations": UNKNOWN_AUTHORIZED_OPERATIONS}
        if endpoint_type not in (BROKER_ENDPOINT, 2):
            return {**answer, "error_code": ErrorCode.INVALID_REQUEST if version == 0
                    else ErrorCode.UNSUPPORTED_ENDPOINT_TYPE, "error_message": f"Unsupported endpoint type {endpoint_type}"}
        if endpoint_type != BROKER_ENDPOINT:
            return {**answer, "error_code": ErrorCode.INVALID_REQUEST if version == 0
                    else ErrorCode.MISMATCHED_ENDPOINT_TYPE, "error_message":
                    "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"}
        brokers = [{"broker_id": b.broker_id, "host": b.host, "port": b.port, "rack": b.rack}
                   for b in sorted(meta.brokers.values(), key=lambda b: b.broker_id)]
        return {**answer, "cluster_id": meta.cluster_id, "brokers": brokers,
                "controller_id": meta.controller_id if meta.controller_id in meta.brokers else -1}

    @staticmethod
    def _topic_error(name: str, code: ErrorCode) -> dict:
        return {"error_code": code, "name": name, "topic_id": NULL_UUID, "is_internal": False,
                "partitions": [], "topic_authorized_operations": UNKNOWN_AUTHORIZED_OPERATIONS}

    # -- Produce ---------------------------------------------------------------
    def _leader_channel(self, topic: str, partition: int) -> tuple[ErrorCode, Any]:
        return leader_channel(self._services, topic, partition)

    async def _append_once_started(self, tp: TopicPartition, records: Any, acks: int,
                                   timeout_ms: int) -> ProduceResult:
        """Append once the local leader replica of `tp`, still starting, runs; else, after half
        the request's timeout, NOT_LEADER_OR_FOLLOWER: that answer reaches the client before
        its own timeout (the same figure) gives up on the request, and it retries."""
        err, channel = await once_started(self._services, tp.topic, tp.partition,
                                          asyncio.get_running_loop().time() + max(timeout_ms, 0) / 2000)
        if channel is None:
            return ProduceResult(err)
        return await channel.append(records, acks, timeout_ms)

    async def _produce(self, version: int, body: dict) -> dict | None:
        acks = body["acks"]
        transactional_id = body.get("transactional_id")
        writes = transactional_writes((t["name"], p["index"], p["records"])
                                      for t in body["topic_data"] for p in t["partition_data"])
        code = refusal(transactional_id, writes)
        if code is None and acks not in (-1, 0, 1):
            code = ErrorCode.INVALID_REQUIRED_ACKS
        verified = await self._verifier.verify(transactional_id, writes) if writes and code is None else {}
        jobs: list[tuple[str, int, Awaitable | ErrorCode]] = []
        for topic_data in body["topic_data"]:
            topic = topic_data["name"]
            for pdata in topic_data["partition_data"]:
                index = pdata["index"]
                refused = code or (verified.get(TopicPartition(topic, index)) if verified else None)
                if refused:
                    jobs.append((topic, index, refused))
                    continue
                err, channel = self._leader_channel(topic, index)
                records = pdata["records"]
                if (err is ErrorCode.NOT_LEADER_OR_FOLLOWER and records and topic not in INTERNAL_TOPICS
                        and TopicPartition(topic, index) in self._services.starting):
                    jobs.append((topic, index, self._append_once_started(
                        TopicPartition(topic, index), records, acks, body["timeout_ms"])))
                    continue
                if err is not ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and topic in INTERNAL_TOPICS:
                    # Kafka's ReplicaManager refuses clients' writes to internal topics: only the
                    # group (and transaction) coordinators write there, through their own path
                    # (`Frontend.append`), and one junk record could break a partition's groups.
                    err = ErrorCode.INVALID_TOPIC_EXCEPTION
                elif err is ErrorCode.NONE and not records:
                    err = ErrorCode.CORRUPT_MESSAGE
                if err is not ErrorCode.NONE:
                    jobs.append((topic, index, err))
                else:
                    jobs.append((topic, index, channel.append(records, acks, body["timeout_ms"])))
        awaited = [j for _, _, j in jobs if not isinstance(j, ErrorCode)]
        # (most produce requests write one partition: awaited as it is, without gather's future)
        done = iter([await awaited[0]] if len(awaited) == 1 else await asyncio.gather(*awaited))
        if acks == 0:
            return None
        by_topic: dict[str, list[dict]] = {}
        for topic, index, job in jobs:
            if job is ErrorCode.INVALID_TOPIC_EXCEPTION:
                entry = {"index": index, "error_code": job, "base_offset": -1,
                         "error_message": f"Cannot append to internal topic {topic}"}
            elif isinstance(job, ErrorCode):
                entry = {"index": index, "error_code": job, "base_offset": -1}
            else:
                result = next(done)
                entry = {"index": index, "error_code": result.error, "base_offset": result.base_offset,
                         "log_append_time_ms": result.log_append_time_ms,
                         "log_start_offset": result.log_start_offset, "error_message": result.error_message,
                         "record_errors": [{"batch_index": i, "batch_index_error_message": m}
                                           for i, m in result.record_errors]}
            by_topic.setdefault(topic, []).append(entry)
        return {"responses": [{"name": t, "partition_responses": ps} for t, ps in by_topic.items()],
                "throttle_time_ms": 0}

    # -- Fetch -----------------------------------------------------------------
    async def _fetch(self, version: int, body: dict) -> dict:
        max_wait_ms = max(0, body["max_wait_ms"])
        min_bytes = body["min_bytes"]
        max_bytes = body.get("max_bytes", 0x7FFFFFFF)
        wanted: list[tuple[str, dict, ErrorCode, Any]] = []
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max_wait_ms / 1000
        for topic in body["topics"]:
            name = topic["topic"]
            for p in topic["partitions"]:
                err, channel = self._leader_channel(name, p["partition"])
                if err is ErrorCode.NOT_LEADER_OR_FOLLOWER:   # a replica still starting: within the fetch's wait
                    err, channel = await once_started(self._services, name, p["partition"], deadline)
                wanted.append((name, p, err, channel))
        max_wait_ms = min(max_wait_ms, max(0, int((deadline - loop.time()) * 1000)))
        replica_id = body["replica_state"]["replica_id"] if version >= 15 else body.get("replica_id", -1)
        read_committed = replica_id < 0 and body.get("isolation_level", 0) == READ_COMMITTED
        # Kafka answers at once when a partition of the fetch has an error (DelayedFetch).
        complete_now = any(err is not ErrorCode.NONE for _, _, err, _ in wanted)
        if complete_now:
            max_wait_ms = 0
        read_on = None
        if replica_id >= 0:  # a follower's fetch: up to the log end, moving the high watermark
            reads = [channel.start_replica_read(replica_id, p.get("current_leader_epoch", -1), p["fetch_offset"],
                                                p["partition_max_bytes"], max_wait_ms)
                     if channel is not None else None for _, p, _, channel in wanted]
        else:
            reads = [channel.start_read(p["fetch_offset"], p["partition_max_bytes"], max_wait_ms, read_committed)
                     if channel is not None else None for _, p, _, channel in wanted]
            read_on = _reading_on([(p, channel) for _, p, _, channel in wanted if channel is not None], max_wait_ms,
                                  read_committed)
        started = [r for r in reads if r is not None]
        answers = iter(await await_fetch(started, min_bytes, max_wait_ms, complete_now, read_on))
        return self._fetch_response(version, wanted, [next(answers) if r is not None else None for r in reads],
                                    max_bytes)

    @staticmethod
    def _fetch_response(version: int, wanted: list, results: list[FetchResult | None], max_bytes: int) -> dict:
        responses: dict[str, list[dict]] = {}
        budget = max_bytes
        for (name, p, err, _), result in zip(wanted, results):
            entry = {"partition_index": p["partition"], "error_code": err, "high_watermark": -1,
                     "last_stable_offset": -1, "log_start_offset": -1, "aborted_transactions": None,
                     "preferred_read_replica": -1, "records": None}
            if result is not None:
                regions = result.regions
                if regions and budget < result.size and budget < max_bytes:
                    regions = ()  # response is full; the first partition always gets its data
                budget -= sum(r.length for r in regions)
                error = result.error
                if error is ErrorCode.KAFKA_STORAGE_ERROR and version < 6:
                    error = ErrorCode.NOT_LEADER_OR_FOLLOWER  # older clients do not know it (Kafka's rule)
                aborted = result.aborted_transactions   # (None but for read_committed, as Kafka's)
                entry.update(error_code=error, high_watermark=result.high_watermark,
                             last_stable_offset=result.last_stable_offset,
                             log_start_offset=result.log_start_offset,
                             aborted_transactions=None if aborted is None else [
                                 {"producer_id": a.producer_id, "first_offset": a.first_offset} for a in aborted],
                             records=FileRecords(regions) if regions else b"")
            responses.setdefault(name, []).append(entry)
        return {"throttle_time_ms": 0, "error_code": 0, "session_id": 0,
                "responses": [{"topic": t, "partitions": ps} for t, ps in responses.items()]}

    # -- ListOffsets -----------------------------------------------------------
    async def _list_offsets(self, version: int, body: dict) -> dict:
        topics_out = []
        for topic in body["topics"]:
            name = topic["name"]
            calls, entries = [], []
            for p in topic["partitions"]:
                err, channel = self._leader_channel(name, p["partition_index"])
                if err is ErrorCode.NOT_LEADER_OR_FOLLOWER:
                    err, channel = await once_started(self._services, name, p["partition_index"],
                                                      asyncio.get_running_loop().time() + STARTING_WAIT_MS / 1000)
                entry = {"partition_index": p["partition_index"], "error_code": err,
                         "timestamp": -1, "offset": -1, "leader_epoch": -1, "old_style_offsets": []}
                entries.append(entry)
                if channel is not None:
                    calls.append((entry, channel.list_offset(p["timestamp"], body.get("isolation_level", 0))))
            for entry, result in zip([e for e, _ in calls], await asyncio.gather(*[c for _, c in calls])):
                entry.update(error_code=result.error, timestamp=result.timestamp, offset=result.offset,
                             leader_epoch=result.leader_epoch)
            topics_out.append({"name": name, "partitions": entries})
        return {"throttle_time_ms": 0, "topics": topics_out}

    # -- DeleteRecords -----------------------------------------------------------------
    async def _delete_records(self, version: int, body: dict) -> dict:
        """Each partition goes to its local leader replica, which moves its log start offset.

        Answers still missing after timeout_ms get REQUEST_TIMED_OUT (the deletion may still
        take effect, as in Kafka). With timeout_ms <= 0 the replicas' own step is awaited
        all the same: Kafka does that step before it waits, and only waits for followers.
        """
        timeout_ms = body["timeout_ms"]
        topics_out, calls = [], []
        deadline = asyncio.get_running_loop().time() + max(timeout_ms, 0) / 2000   # as for Produce
        for topic in body["topics"]:
            entries = []
            for p in topic["partitions"]:
                err, channel = self._leader_channel(topic["name"], p["partition_index"])
                if err is ErrorCode.NOT_LEADER_OR_FOLLOWER:
                    err, channel = await once_started(self._services, topic["name"], p["partition_index"], deadline)
                entry = {"partition_index": p["partition_index"], "low_watermark": -1, "error_code": err}
                entries.append(entry)
                if channel is not None:
                    calls.append((entry, asyncio.ensure_future(channel.delete_records(p["offset"]))))
            topics_out.append({"name": topic["name"], "partitions": entries})
        if calls:
            await asyncio.wait([job for _, job in calls], timeout=timeout_ms / 1000 if timeout_ms > 0 else None)
        for entry, job in calls:
            if job.done():
                result = job.result()
                entry.update(error_code=result.error, low_watermark=result.low_watermark)
            else:
                entry["error_code"] = ErrorCode.REQUEST_TIMED_OUT
        return {"throttle_time_ms": 0, "topics": topics_out}

    # -- CreateTopics / DeleteTopics ---------------------------------------------
    async def _create_topics(self, version: int, body: dict) -> dict:
        specs, seen, duplicates = [], set(), set()
        for t in body["topics"]:
            if t["name"] in seen:
                duplicates.add(t["name"])
            seen.add(t["name"])
            specs.append(TopicSpec(
                name=t["name"], num_partitions=t["num_partitions"], replication_factor=t["replication_factor"],
                assignments={a["partition_index"]: tuple(a["broker_ids"]) for a in t.get("assignments") or []},
                configs={c["name"]: c["value"] for c in t.get("configs") or []}))
        unique = [s for s in specs if s.name not in duplicates]
        results = await self._services.create_topics(unique, body.get("validate_only", False), body["timeout_ms"])
        out = [{"name": r.name, "topic_id": r.topic_id, "error_code": r.error, "error_message": r.message,
                "num_partitions": r.num_partitions, "replication_factor": r.replication_factor,
                "configs": [{"name": k, "value": v, "read_only": False, "config_source": 5, "is_sensitive": False}
                            for k, v in r.configs.items()] if r.error == ErrorCode.NONE else None}
               for r in results]
        out += [{"name": n, "topic_id": NULL_UUID, "error_code": ErrorCode.INVALID_REQUEST,
                 "error_message": f"Create topics request from client contains multiple entries for topic {n}",
                 "num_partitions": -1, "replication_factor": -1, "configs": None} for n in sorted(duplicates)]
        return {"throttle_time_ms": 0, "topics": out}

    async def _delete_topics(self, version: int, body: dict) -> dict:
        meta = self._services.metadata
        names: list[str] = list(body.get("topic_names") or [])
        unknown_ids = []
        for t in body.get("topics") or []:
            if t.get("name") is not None:
                names.append(t["name"])
            else:
                info = meta.topic_by_id(t["topic_id"])
                if info is None:
                    unknown_ids.append(t["topic_id"])
                else:
                    names.append(info.name)
        results = await self._services.delete_topics(names, body["timeout_ms"])
        out = [{"name": r.name, "topic_id": r.topic_id, "error_code": r.error, "error_message": r.message}
               for r in results]
        out += [{"name": None, "topic_id": i, "error_code": ErrorCode.UNKNOWN_TOPIC_ID, "error_message": None}
                for i in unknown_ids]
        return {"throttle_time_ms": 0, "responses": out}

    async def _create_partitions(self, version: int, body: dict) -> dict:
        """CreatePartitions v0-3 (KIP-195). A topic named twice is refused as Kafka's KafkaApis
        refuses it, once; the others go to the broker's coordinator (AdminService)."""
        names = [t["name"] for t in body["topics"]]
        duplicates = {n for n in names if names.count(n) > 1}
        specs = [PartitionsSpec(t["name"], t["count"], None if t.get("assignments") is None
                                else tuple(tuple(a["broker_ids"]) for a in t["assignments"]))
                 for t in body["topics"] if t["name"] not in duplicates]
        results = await self._services.create_partitions(specs, body["validate_only"], body["timeout_ms"]) \
            if specs else []
        out = [{"name": r.name, "error_code": r.error, "error_message": r.message} for r in results]
        out += [{"name": n, "error_code": ErrorCode.INVALID_REQUEST, "error_message": "Duplicate topic in request."}
                for n in sorted(duplicates)]
        return {"throttle_time_ms": 0, "results": out}


def _reading_on(partitions: list[tuple[dict, Any]], max_wait_ms: int,
                read_committed: bool = False) -> Callable[[int, FetchResult], PendingRead | None]:
    """How a consumer's fetch short of min_bytes reads on in partition `i` (its request entry
    and channel), from where its data so far ends (its fetch offset while it has none), within
    its partition_max_bytes and what is left of max_wait_ms, with the fetch's isolation."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max_wait_ms / 1000

    def read_on(i: int, so_far: FetchResult) -> PendingRead | None:
        p, channel = partitions[i]
        room = p["partition_max_bytes"] - so_far.size
        wait_ms = int((deadline - loop.time()) * 1000)
        if room <= 0 or wait_ms <= 0:
            return None
        return channel.start_read(so_far.next_offset if so_far.regions else p["fetch_offset"], room, wait_ms,
                                  read_committed)
    return read_on

