"""The znodes of the cluster as a whole, encoded and decoded as Kafka 3.9 does: its id
(`/cluster/id`), its brokers (`/brokers/ids/<id>`), its controller (`/controller`,
`/controller_epoch`) and its producer id blocks (`/latest_producer_id_block`).
Pure functions and frozen values."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from rafka.common.types import Endpoint
from rafka.coordinator.zk.zk_json import dumps, loads, new_kafka_uuid, uuid_to_kafka
from rafka.coordinator.zk.zk_paths import (CLUSTER_ID_PATH, CONTROLLER_PATH, LATEST_PRODUCER_ID_BLOCK_PATH,
                                           broker_path)

__all__ = [
    "new_cluster_id", "encode_cluster_id", "decode_cluster_id",
    "BrokerRegistration", "encode_broker", "decode_broker",
    "encode_controller", "decode_controller", "encode_controller_epoch", "decode_controller_epoch",
    "PRODUCER_ID_BLOCK_SIZE", "MAX_PRODUCER_ID", "ProducerIdBlock", "encode_producer_id_block",
    "decode_producer_id_block",
]


# ---- /cluster/id -------------------------------------------------------------------------
def new_cluster_id() -> str:
    """A new cluster id, as Kafka generates it in ZooKeeper mode (22 base64url characters)."""
    return uuid_to_kafka(new_kafka_uuid())


def encode_cluster_id(cluster_id: str) -> bytes:
    """`{"version":"1","id":"..."}`: Kafka writes the version as a string here."""
    return dumps({"version": "1", "id": cluster_id})


def decode_cluster_id(data: bytes) -> str:
    return str(loads(data, CLUSTER_ID_PATH)["id"])


# ---- /brokers/ids/<id> -------------------------------------------------------------------
@dataclass(frozen=True)
class BrokerRegistration:
    """What a broker writes to its ephemeral `/brokers/ids/<id>` (JSON version 5)."""

    broker_id: int
    endpoints: tuple[Endpoint, ...]
    rack: str | None = None
    jmx_port: int = -1
    timestamp_ms: int = field(default=0, compare=False)

    def endpoint(self, listener: str) -> Endpoint | None:
        """The endpoint of `listener` (e.g. "PLAINTEXT"), or None."""
        return next((e for e in self.endpoints if e.listener == listener), None)


def _connection_string(e: Endpoint) -> str:
    host = f"[{e.host}]" if ":" in e.host else e.host  # Utils.formatAddress
    return f"{e.listener}://{host}:{e.port}"


def encode_broker(reg: BrokerRegistration, timestamp_ms: int | None = None) -> bytes:
    """Kafka's `BrokerIdZNode.encode`, version 5. `rack` is omitted when None; the top-level
    host/port are those of the first PLAINTEXT endpoint (null/-1 when there is none)."""
    plaintext = next((e for e in reg.endpoints if e.security_protocol == "PLAINTEXT"), None)
    ts = timestamp_ms if timestamp_ms is not None else (reg.timestamp_ms or int(time.time() * 1000))
    body: dict[str, Any] = {
        "features": {},
        "listener_security_protocol_map": {e.listener: e.security_protocol for e in reg.endpoints},
        "endpoints": [_connection_string(e) for e in reg.endpoints],
        "jmx_port": reg.jmx_port,
        "port": plaintext.port if plaintext else -1,
        "host": plaintext.host if plaintext else None,
        "version": 5,
        "timestamp": str(ts),
    }
    if reg.rack is not None:
        body["rack"] = reg.rack
    return dumps(body)


_DEFAULT_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


def decode_broker(broker_id: int, data: bytes) -> BrokerRegistration:
    """Kafka's `BrokerIdZNode.decode` for versions 1-5."""
    js = loads(data, broker_path(broker_id))
    version = int(js.get("version", 0))
    if version < 1:
        raise ValueError(f"Unsupported version of broker registration: {data!r}")
    if version == 1:
        endpoints: tuple[Endpoint, ...] = (Endpoint("PLAINTEXT", str(js["host"]), int(js["port"]), "PLAINTEXT"),)
    else:
        protocols = js.get("listener_security_protocol_map") or {p: p for p in _DEFAULT_PROTOCOLS}
        parsed = []
        for text in js.get("endpoints", []):
            ep = Endpoint.parse(text)
            if ep.listener not in protocols:
                raise ValueError(f"No security protocol defined for listener {ep.listener} in {data!r}")
            parsed.append(Endpoint(ep.listener, ep.host, ep.port, str(protocols[ep.listener])))
        endpoints = tuple(parsed)
    rack = js.get("rack")
    ts = js.get("timestamp")
    return BrokerRegistration(
        broker_id=broker_id,
        endpoints=endpoints,
        rack=str(rack) if rack is not None else None,
        jmx_port=int(js.get("jmx_port", -1)),
        timestamp_ms=int(ts) if ts not in (None, "") else 0,
    )


# ---- /controller, /controller_epoch ------------------------------------------------------
def encode_controller(broker_id: int, timestamp_ms: int | None = None) -> bytes:
    """`{"version":2,"brokerid":N,"timestamp":"<ms>","kraftControllerEpoch":-1}` (Kafka 3.9)."""
    ts = timestamp_ms if timestamp_ms is not None else int(time.time() * 1000)
    return dumps({"version": 2, "brokerid": broker_id, "timestamp": str(ts), "kraftControllerEpoch": -1})


def decode_controller(data: bytes) -> int:
    """The controller's broker id."""
    return int(loads(data, CONTROLLER_PATH)["brokerid"])


def encode_controller_epoch(epoch: int) -> bytes:
    """Plain decimal text, as Kafka writes it."""
    return str(epoch).encode("utf-8")


def decode_controller_epoch(data: bytes) -> int:
    return int(data.decode("utf-8").strip())


# ---- /latest_producer_id_block -----------------------------------------------------------
PRODUCER_ID_BLOCK_SIZE = 1000        # Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE
MAX_PRODUCER_ID = 2**63 - 1


@dataclass(frozen=True)
class ProducerIdBlock:
    """A block of producer ids handed to one broker: `first_producer_id` .. `last_producer_id`."""

    assigned_broker_id: int
    first_producer_id: int
    size: int

    @property
    def last_producer_id(self) -> int:
        return self.first_producer_id + self.size - 1


def encode_producer_id_block(block: ProducerIdBlock) -> bytes:
    return dumps({"version": 1, "broker": block.assigned_broker_id,
                  "block_start": str(block.first_producer_id), "block_end": str(block.last_producer_id)})


def decode_producer_id_block(data: bytes) -> ProducerIdBlock:
    js = loads(data, LATEST_PRODUCER_ID_BLOCK_PATH)
    start, end = int(js["block_start"]), int(js["block_end"])
    return ProducerIdBlock(int(js["broker"]), start, end - start + 1)
