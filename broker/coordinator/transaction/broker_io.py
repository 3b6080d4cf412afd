"""The transaction coordinator's I/O over a real broker: `__transaction_state` appends and reads, and
WriteTxnMarkers to the partition leaders (locally, or over the inter-broker listener), as Kafka's
TransactionStateManager.appendTransactionToLog and TransactionMarkerChannelManager do.

A marker on a `__consumer_offsets` partition also ends the producer's pending TxnOffsetCommit offsets there
(`PendingTxnOffsets`): kept in memory until then, written as ordinary commits on COMMIT, dropped on ABORT.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from broker.coordinator.offsets_schema import (
    OffsetCommitKey,
    OffsetCommitValue,
    decode_key,
    decode_offset_commit_value,
    encode_key,
    encode_offset_commit_value,
)
from broker.coordinator.transaction.coordinator import TXN_STATE_TOPIC, Partitions
from broker.errors import ErrorCode, KafkaError
from broker.log.log import PartitionLog
from broker.log.records import Record, build_batch, decode_records, iter_batches
from broker.log.txn_index import COMMIT, control_type
from broker.metadata import OFFSETS_TOPIC
from broker.replication.client import BrokerConnection

if TYPE_CHECKING:
    from broker.broker import Broker

log = logging.getLogger(__name__)

_APPEND_TIMEOUT_S = 30.0
_MARKER_ATTEMPTS = 600  # about ten minutes of retries before a marker write is given up (and logged)
_WRITE_TXN_MARKERS = 27
_ADD_PARTITIONS_TO_TXN = 24
# Marker answers that end the retries (Kafka's TransactionMarkerRequestCompletionHandler gives up on fencing).
_MARKER_DONE = (ErrorCode.none, ErrorCode.invalid_producer_epoch, ErrorCode.transaction_coordinator_fenced)


KeyedRecords = list[tuple[bytes, bytes | None]]


def read_keyed(plog: PartitionLog, on_open: Callable[[int, KeyedRecords], None] | None = None
               ) -> Iterator[tuple[bytes, bytes | None]]:
    """Every committed (key, value) of a coordinator topic partition in log order, as Kafka's coordinators load
    them: a transaction's records (TxnOffsetCommit in `__consumer_offsets`) count where their COMMIT marker is
    and are dropped at an ABORT; those of a transaction still open at the end go to `on_open(producer id,
    records)`. Keyless records are refused: the coordinators only write keyed ones."""
    offset = plog.log_start_offset
    pending: dict[int, KeyedRecords] = {}
    while offset < plog.log_end_offset:
        chunk = plog.read(offset, 1 << 20)
        if not chunk:
            break
        for pos, header in iter_batches(chunk):
            batch = memoryview(chunk)[pos:pos + header.size]
            if header.last_offset < offset:
                continue
            floor, offset = offset, header.next_offset  # the log may start inside the first batch
            if header.is_control:
                done = pending.pop(header.producer_id, [])
                try:
                    if control_type(batch)[0] == COMMIT:
                        yield from done
                except ValueError:
                    log.warning("%s-%d: unreadable control batch at %d", plog.topic, plog.partition,
                                header.base_offset)
                continue
            records = []
            for rec in decode_records(batch):
                if rec.offset < floor:
                    continue
                if rec.key is None:
                    raise TypeError(f"{plog.topic}-{plog.partition} offset {rec.offset}: record without a key")
                records.append((rec.key, rec.value))
            if header.is_transactional and header.producer_id >= 0:
                pending.setdefault(header.producer_id, []).extend(records)
            else:
                yield from records
    if on_open is not None:
        for pid, records in pending.items():
            on_open(pid, records)


class TxnStateTopicLog:
    """`__transaction_state` for the coordinator: one record per append, acknowledged by the ISR (acks=all, as
    Kafka writes it with transaction.state.log.min.isr)."""

    def __init__(self, broker: Broker) -> None:
        self._broker = broker

    async def append(self, partition: int, key: bytes, value: bytes | None) -> None:
        replicas = self._broker.replicas
        batch = build_batch([Record(timestamp=self._broker.clock.now_ms(), key=key, value=value)])
        part, result = replicas.append(TXN_STATE_TOPIC, partition, batch, required_acks=-1)
        error = await replicas.wait_for_replication(part, result.last_offset, _APPEND_TIMEOUT_S)
        if error != ErrorCode.none:
            raise KafkaError(error)

    def read(self, partition: int) -> Iterator[tuple[bytes, bytes | None]]:
        plog = self._broker.logs.get(TXN_STATE_TOPIC, partition)
        return iter(()) if plog is None else read_keyed(plog)


class PendingTxnOffsets:
    """TxnOffsetCommit offsets by producer id and group, until the transaction's marker reaches the group's
    `__consumer_offsets` partition (Kafka's GroupMetadata pendingTransactionalOffsetCommits). They are in the
    log already, as transactional records; a load restores those of open transactions here (`restore`)."""

    def __init__(self) -> None:
        self._pending: dict[int, dict[str, dict[tuple[str, int], tuple[int, int, str | None]]]] = {}

    def add(self, producer_id: int, group_id: str, offsets: list[tuple[str, int, int, int, str | None]]) -> None:
        groups = self._pending.setdefault(producer_id, {})
        stored = groups.setdefault(group_id, {})
        for topic, p, offset, leader_epoch, metadata in offsets:
            stored[(topic, p)] = (offset, leader_epoch, metadata)

    def take(self, producer_id: int, groups_in: set[str] | None = None
             ) -> dict[str, list[tuple[str, int, int, int, str | None]]]:
        """Remove and return the producer's offsets (of the groups in `groups_in`, default all)."""
        groups = self._pending.get(producer_id, {})
        out = {}
        for g in [g for g in groups if groups_in is None or g in groups_in]:
            out[g] = [(t, p, o, e, m) for (t, p), (o, e, m) in groups.pop(g).items()]
        if not groups:
            self._pending.pop(producer_id, None)
        return out

    def restore(self, producer_id: int, records: KeyedRecords) -> None:
        """Offsets of a transaction still open when an offsets partition loads (see `read_keyed`)."""
        for raw_key, raw_value in records:
            key = decode_key(raw_key)
            if isinstance(key, OffsetCommitKey) and raw_value is not None:
                v = decode_offset_commit_value(raw_value)
                self.add(producer_id, key.group, [(key.topic, key.partition, v.offset, v.leader_epoch, v.metadata)])

    def has_pending(self, group_id: str, topic: str, partition: int) -> bool:
        """Whether an open transaction commits an offset of this group's partition (Kafka's
        GroupMetadata.hasPendingOffsetCommitsForTopicPartition, for OffsetFetch require_stable, KIP-447)."""
        return any((topic, partition) in groups.get(group_id, {}) for groups in self._pending.values())

    def groups_of(self, producer_id: int) -> list[str]:
        return list(self._pending.get(producer_id, {}))

    def count(self) -> int:
        return sum(len(o) for g in self._pending.values() for o in g.values())


async def write_txn_offsets(broker: Broker, group_id: str, producer_id: int, producer_epoch: int,
                            offsets: list[tuple[str, int, int, int, str | None]]) -> ErrorCode:
    """TxnOffsetCommit: the offsets as one transactional batch in the group's `__consumer_offsets` partition
    (Kafka's GroupMetadataManager.storeOffsets with a producer id), acknowledged by the ISR, then pending until
    the transaction's marker."""
    now = broker.clock.now_ms()
    records = [Record(timestamp=now, key=encode_key(OffsetCommitKey(group_id, t, p)),
                      value=encode_offset_commit_value(OffsetCommitValue(o, m or "", now, e)))
               for t, p, o, e, m in offsets]
    batch = build_batch(records, producer_id=producer_id, producer_epoch=producer_epoch, is_transactional=True)
    try:
        part, last = broker.replicas.append_as_coordinator(
            OFFSETS_TOPIC, broker.group_coordinator.partition_for(group_id), batch)
    except KafkaError as e:
        return e.code
    error = await broker.replicas.wait_for_replication(part, last, _APPEND_TIMEOUT_S)
    if error == ErrorCode.none:
        broker.txn_offsets.add(producer_id, group_id, offsets)
    return error


async def write_local_marker(broker: Broker, topic: str, partition: int, producer_id: int, producer_epoch: int,
                             coordinator_epoch: int, commit: bool) -> ErrorCode:
    """Append one marker as this partition's leader and wait for the ISR (WriteTxnMarkers' local work); a
    marker on `__consumer_offsets` then ends the producer's pending transactional offsets of its groups."""
    try:
        part, offset = broker.replicas.append_marker(topic, partition, producer_id, producer_epoch,
                                                     coordinator_epoch, commit)
    except KafkaError as e:
        return e.code
    except OSError as e:   # retried like any storage error: an exception here would end the completion for good
        log.warning("%s-%d: marker of producer %d not written: %s", topic, partition, producer_id, e)
        return ErrorCode.kafka_storage_error
    error = await broker.replicas.wait_for_replication(part, offset, _APPEND_TIMEOUT_S)
    if error == ErrorCode.none and topic == OFFSETS_TOPIC:
        gc = broker.group_coordinator
        mine = {g for g in broker.txn_offsets.groups_of(producer_id) if gc.partition_for(g) == partition}
        for group_id, offsets in broker.txn_offsets.take(producer_id, mine).items():
            if commit:
                gc.commit_transactional_offsets(group_id, offsets)
    return error


async def verify_txn_partition(broker: Broker, tid: str, producer_id: int, producer_epoch: int, topic: str,
                               partition: int) -> ErrorCode:
    """KIP-890 part 1 for a partition leader: is (topic, partition) in the producer's ongoing transaction? Asked
    of the local coordinator, or with AddPartitionsToTxn v4 `verify_only` of the broker leading the id's
    `__transaction_state` partition (Kafka's AddPartitionsToTxnManager, one request per check here)."""
    coordinator = broker.txn_coordinator
    endpoint_of = broker.txn_markers.endpoint
    error = coordinator.verify_partitions(tid, producer_id, producer_epoch, {(topic, partition)})
    if error != ErrorCode.not_coordinator or not broker.clustered:
        return error
    state = broker.metadata.partition_state(TXN_STATE_TOPIC, coordinator.partition_for(tid))
    if state is None or state.leader < 0 or state.leader == broker.node_id:
        return ErrorCode.coordinator_not_available
    endpoint = endpoint_of(state.leader)
    if endpoint is None:
        return ErrorCode.coordinator_not_available
    conn = BrokerConnection(*endpoint, f"txn-verifier-{broker.node_id}", broker.fetchers.client_security)
    body = {"transactions": [{"transactional_id": tid, "producer_id": producer_id, "producer_epoch": producer_epoch,
                              "verify_only": True, "topics": [{"name": topic, "partitions": [partition]}]}]}
    try:
        await conn.connect(_APPEND_TIMEOUT_S)
        resp = await conn.request(_ADD_PARTITIONS_TO_TXN, 4, body, _APPEND_TIMEOUT_S)
    except (TimeoutError, OSError, ConnectionError) as e:
        log.info("AddPartitionsToTxn verification with broker %d failed: %s", state.leader, e)
        return ErrorCode.coordinator_not_available
    finally:
        conn.close()
    if resp.error_code != ErrorCode.none:
        return ErrorCode(resp.error_code)
    codes = [p.partition_error_code for r in resp.results_by_transaction for t in r.topic_results
             for p in t.results_by_partition]
    return ErrorCode(codes[0]) if codes else ErrorCode.unknown_server_error


class BrokerMarkerWriter:
    """WriteTxnMarkers to each partition's leader: this broker's own partitions directly, the others with a
    WriteTxnMarkers request over the inter-broker listener; retried while the leader is unknown or moving."""

    def __init__(self, broker: Broker, endpoint: Callable[[int], tuple[str, int] | None]) -> None:
        self._broker = broker
        self.endpoint = endpoint  # a live broker's inter-broker (host, port)

    async def write(self, producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool,
                    partitions: Partitions) -> None:
        todo = set(partitions)
        for attempt in range(_MARKER_ATTEMPTS):
            by_leader: dict[int, list[tuple[str, int]]] = {}
            for topic, p in sorted(todo):
                state = self._broker.metadata.partition_state(topic, p)
                if self._broker.metadata.topic(topic) is None:
                    todo.discard((topic, p))  # deleted: nothing to mark (Kafka drops it too)
                elif state is not None and state.leader >= 0:
                    by_leader.setdefault(state.leader, []).append((topic, p))
            for leader, tps in by_leader.items():
                done = await self._write_to(leader, producer_id, producer_epoch, coordinator_epoch, commit, tps)
                todo.difference_update(done)
            if not todo:
                return
            await asyncio.sleep(min(0.05 * (attempt + 1), 1.0))
        log.error("gave up writing %s markers of producer %d to %s", "COMMIT" if commit else "ABORT",
                  producer_id, sorted(todo))

    async def _write_to(self, leader: int, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                        commit: bool, tps: list[tuple[str, int]]) -> list[tuple[str, int]]:
        """Marker writes to one leader; returns the partitions done (written, or refused for good)."""
        broker = self._broker
        if leader == broker.node_id:
            done = []
            for topic, p in tps:
                error = await write_local_marker(broker, topic, p, producer_id, producer_epoch, coordinator_epoch,
                                                 commit)
                if error in _MARKER_DONE:
                    done.append((topic, p))  # an older epoch's or coordinator's marker: a newer one supersedes it
            return done
        endpoint = self.endpoint(leader)
        if endpoint is None:
            return []
        conn = BrokerConnection(*endpoint, f"txn-marker-sender-{broker.node_id}", broker.fetchers.client_security)
        topics: dict[str, list[int]] = {}
        for topic, p in tps:
            topics.setdefault(topic, []).append(p)
        body = {"markers": [{"producer_id": producer_id, "producer_epoch": producer_epoch,
                             "transaction_result": commit, "coordinator_epoch": coordinator_epoch,
                             "topics": [{"name": t, "partition_indexes": ps} for t, ps in topics.items()]}]}
        try:
            await conn.connect(_APPEND_TIMEOUT_S)
            resp = await conn.request(_WRITE_TXN_MARKERS, 1, body, _APPEND_TIMEOUT_S + 5)
        except (TimeoutError, OSError, ConnectionError) as e:
            log.info("WriteTxnMarkers to broker %d failed: %s", leader, e)
            return []
        finally:
            conn.close()
        return [(t.name, p.partition_index) for m in resp.markers for t in m.topics for p in t.partitions
                if p.error_code in _MARKER_DONE]
