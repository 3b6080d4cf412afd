"""`__transaction_state` records in Kafka's format (transaction-coordinator's TransactionLogKey.json and
TransactionLogValue.json).

Key: int16 version 0 + TransactionalId (string). Value: int16 version + TransactionLogValue: v0 (Kafka 3.x)
ProducerId int64, ProducerEpoch int16, TransactionTimeoutMs int32, TransactionStatus int8,
TransactionPartitions (nullable [] of Topic string + PartitionIds []int32), TransactionLastUpdateTimestampMs
int64, TransactionStartTimestampMs int64; v1 is the same fields flexible (compact strings/arrays, tag buffers)
with tagged PreviousProducerId (0), NextProducerId (1), ClientTransactionVersion (2). We write v0, as Kafka
does for transaction version 0/1 clients; both versions read. A null value is a tombstone (the id expired).
"""

from __future__ import annotations

import struct
from collections import defaultdict

from broker.coordinator.transaction.metadata import TxnState, TxnTransit
from common.wire import Reader, Writer, uvarint

KEY_VERSION = 0
_I8 = struct.Struct(">b")


class TxnLogError(ValueError):
    """A record that does not decode as TransactionLogKey/Value."""


def encode_key(transactional_id: str) -> bytes:
    w = Writer(flexible=False)
    w.int16(KEY_VERSION)
    w.string(transactional_id)
    return w.getvalue()


def decode_key(data: bytes) -> str:
    r = Reader(data, error=TxnLogError)
    version = r.int16()
    if version != KEY_VERSION:
        raise TxnLogError(f"TransactionLogKey version {version}")
    tid = r.string()
    r.done()
    return tid


def encode_value(t: TxnTransit, version: int = 0) -> bytes:
    """TransactionLogValue; Empty writes null partitions, as Kafka."""
    if version not in (0, 1):
        raise TxnLogError(f"TransactionLogValue version {version}")
    flexible = version == 1
    w = Writer(flexible)
    w.int16(version)
    w.int64(t.producer_id)
    w.int16(t.producer_epoch)
    w.int32(t.timeout_ms)
    w.parts.append(_I8.pack(int(t.state)))
    by_topic: dict[str, list[int]] = defaultdict(list)
    for topic, p in sorted(t.partitions):
        by_topic[topic].append(p)
    if t.state == TxnState.EMPTY:
        w.parts.append(b"\x00" if flexible else b"\xff\xff\xff\xff")
    else:
        w.array_len(len(by_topic))
        for topic, ids in by_topic.items():
            w.string(topic)
            w.array_len(len(ids))
            for p in ids:
                w.int32(p)
            w.tags()
    w.int64(t.update_ms)
    w.int64(t.start_ms)
    if flexible:
        tags = []
        if t.last_producer_id >= 0:
            tags.append((0, struct.pack(">q", t.last_producer_id)))
        w.parts.append(uvarint(len(tags)))
        for tag, payload in tags:
            w.parts.append(uvarint(tag) + uvarint(len(payload)) + payload)
    return w.getvalue()


def decode_value(data: bytes) -> TxnTransit:
    """A TransactionLogValue v0 or v1 as the state it records (no last epoch: Kafka does not store it)."""
    if len(data) < 2:
        raise TxnLogError("TransactionLogValue too short")
    version = struct.unpack_from(">h", data)[0]
    if version not in (0, 1):
        raise TxnLogError(f"TransactionLogValue version {version}")
    r = Reader(data, 2, flexible=version == 1, error=TxnLogError)
    pid = r.int64()
    epoch = r.int16()
    timeout = r.int32()
    status = _I8.unpack(r.take(1))[0]
    try:
        state = TxnState(status)
    except ValueError:
        raise TxnLogError(f"unknown TransactionStatus {status}") from None
    n = r.uvarint() - 1 if r.flexible else r.int32()
    partitions: set[tuple[str, int]] = set()
    for _ in range(max(n, 0)):
        topic = r.string()
        for _ in range(r.array_len()):
            partitions.add((topic, r.int32()))
        r.skip_tags()
    update_ms = r.int64()
    start_ms = r.int64()
    previous_pid = -1
    if r.flexible:
        for _ in range(r.uvarint()):
            tag, size = r.uvarint(), r.uvarint()
            payload = r.take(size)
            if tag == 0 and size == 8:
                previous_pid = struct.unpack(">q", payload)[0]
    r.done()
    return TxnTransit(pid, previous_pid, epoch, -1, timeout, state, frozenset(partitions), start_ms, update_ms)
