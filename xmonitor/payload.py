"""The probe record: Xinfra's JSON fields plus a run id and the partition.

Xinfra fields (kept so Xinfra-style consumers and dashboards can read our records): ``topic``, ``time`` (producer
wall clock, ms since epoch, taken just before the send), ``index`` (per-partition sequence, advancing only on an
acknowledged send), ``producerId``, ``content`` (``record size`` × 'x'). Ours: ``runId`` (a fresh id per xmonitor
process: a restart starts a new sequence baseline instead of looking like duplicates), ``partition``, and
``timeUs`` (the same send time in µs, for sub-millisecond end-to-end delay).
"""

from __future__ import annotations

import json
import uuid
from typing import NamedTuple

# Murmur2 as Kafka's default partitioner (the key hashes to the partition the record is sent to).
_M, _R = 0x5BD1E995, 24


def murmur2(data: bytes) -> int:
    length = len(data)
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    n4 = length // 4
    for i in range(n4):
        k = int.from_bytes(data[i * 4:i * 4 + 4], "little")
        k = (k * _M) & 0xFFFFFFFF
        k ^= k >> _R
        k = (k * _M) & 0xFFFFFFFF
        h = (h * _M) & 0xFFFFFFFF
        h ^= k
    rest = length & 3
    tail = data[n4 * 4:]
    if rest == 3:
        h ^= tail[2] << 16
    if rest >= 2:
        h ^= tail[1] << 8
    if rest >= 1:
        h ^= tail[0]
        h = (h * _M) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * _M) & 0xFFFFFFFF
    h ^= h >> 15
    return h


def key_for_partition(partition: int, partitions: int) -> bytes:
    """A short key that Kafka's default partitioner (positive murmur2 mod N) maps to `partition`, so a
    mirrored copy of the record lands in the same partition number (as Xinfra's NewKMPartitioner ensures)."""
    i = 0
    while True:
        key = f"{partition}-{i}".encode()
        if (murmur2(key) & 0x7FFFFFFF) % partitions == partition:
            return key
        i += 1


def new_run_id() -> str:
    return uuid.uuid4().hex[:16]


class Probe(NamedTuple):       # a tuple: built once per consumed record, and a frozen dataclass is slow to build
    topic: str
    run_id: str
    producer_id: str
    partition: int
    index: int
    time_us: int               # send time, µs since the epoch

    @property
    def time_ms(self) -> int:
        return self.time_us // 1000


class PayloadError(ValueError):
    """A record on the monitor topic that is not a probe record (counted as a consume error)."""


class ProbeEncoder:
    """Encodes the probe records of one producer: the JSON fields that never change (topic, producer id, run id,
    content) are escaped once, so a send only formats three integers (json.dumps per record was the costliest
    step of a send). The bytes equal ``json.dumps(fields, separators=(",", ":"))``."""

    def __init__(self, topic: str, run_id: str, producer_id: str, record_size: int) -> None:
        q = json.dumps
        self._head = '{"topic":' + q(topic) + ',"time":'
        self._middle = (',"producerId":' + q(producer_id) + ',"content":"' + "x" * record_size + '","runId":'
                        + q(run_id) + ',"partition":')

    def encode(self, partition: int, index: int, time_us: int) -> bytes:
        return (f'{self._head}{time_us // 1000},"index":{index}{self._middle}{partition},"timeUs":{time_us}}}'
                .encode())


def encode(probe: Probe, record_size: int) -> bytes:
    return ProbeEncoder(probe.topic, probe.run_id, probe.producer_id, record_size).encode(
        probe.partition, probe.index, probe.time_us)


def decode(value: bytes | None, partition: int) -> Probe:
    """`partition` is where the record was read (used when the record has none, e.g. from Xinfra itself)."""
    if not value:
        raise PayloadError("empty record")
    try:
        d = json.loads(value)
        time_us = int(d["timeUs"]) if "timeUs" in d else int(d["time"]) * 1000
        return Probe(topic=str(d.get("topic", "")), run_id=str(d.get("runId", "")),
                     producer_id=str(d.get("producerId", "")), partition=int(d.get("partition", partition)),
                     index=int(d["index"]), time_us=time_us)
    except (ValueError, KeyError, TypeError) as e:
        raise PayloadError(f"not a probe record: {e}") from None
