"""`/latest_producer_id_block` through kazoo, as a mixin of `ZkStore`: claiming blocks of
producer ids for a broker's idempotent producers (and, later, its transaction coordinator)."""
from __future__ import annotations

import logging

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from rafka.coordinator.zk import zk_data as zd

log = logging.getLogger(__name__)


class ZkProducerIdBlocks:
    """Producer id blocks over `self.client`, a started kazoo client."""

    client: KazooClient

    def claim_producer_id_block(self, broker_id: int, size: int = zd.PRODUCER_ID_BLOCK_SIZE,
                                attempts: int = 100) -> zd.ProducerIdBlock:
        """Claim the next `size` producer ids for `broker_id`, as Kafka's ZkProducerIdManager:
        read `/latest_producer_id_block`, then create it (ids from 0) or set it at the version
        read; on a race with another broker, read again. Two brokers never get the same id."""
        path = zd.LATEST_PRODUCER_ID_BLOCK_PATH
        for _ in range(attempts):
            try:
                data, stat = self.client.get(path)
            except NoNodeError:
                data, stat = b"", None
            if data:
                previous = zd.decode_producer_id_block(data)
                first = previous.last_producer_id + 1
            else:
                first = 0
            if first + size - 1 > zd.MAX_PRODUCER_ID:
                raise RuntimeError("Exhausted all producerIds as the next block's end producerId would exceed "
                                   "the int64 type limit")
            block = zd.ProducerIdBlock(broker_id, first, size)
            try:
                if stat is None:
                    self.client.create(path, zd.encode_producer_id_block(block), makepath=True)
                else:
                    self.client.set(path, zd.encode_producer_id_block(block), version=stat.version)
            except (NodeExistsError, BadVersionError):
                continue
            log.info("Broker %d claimed producer id block %d-%d", broker_id, block.first_producer_id,
                     block.last_producer_id)
            return block
        raise RuntimeError(f"could not claim a producer id block after {attempts} attempts")
