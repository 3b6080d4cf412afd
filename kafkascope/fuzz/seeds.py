"""Seed requests for the fuzzer: one plausible request for every API and version a broker advertises.

Built from kio's request schemas rather than recorded, so that every advertised version has a seed: each
field gets a value a real client would send (a topic name for `name`/`topic`, a small timeout for
`timeout_ms`, a valid record batch for `records`), every array one element. Topics and groups are named
`fuzz-…`, so a fuzzing run never names the topics whose records it checks afterwards.
"""

from __future__ import annotations

import datetime
import io
import struct
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, fields
from typing import Any

from kio.index import UnknownEntity
from kio.serial import entity_writer
from kio.serial._introspect import EntityField, EntityTupleField, classify_field

from broker.log.records import GZIP, LZ4, NONE, SNAPPY, ZSTD, Record, build_batch
from broker.protocol.codec import build, request_class

FUZZ_TOPIC = "fuzz-t"
FUZZ_GROUP = "fuzz-g"
_CODECS = (NONE, GZIP, SNAPPY, LZ4, ZSTD)


@dataclass(frozen=True)
class Seed:
    """One request: its kio header and body entities and the encoded frame (without the size prefix)."""

    api_key: int
    api_version: int
    header: Any
    body: Any

    def encode(self, body: Any | None = None) -> bytes:
        return encode_request(self.header, self.body if body is None else body)


def encode_request(header: Any, body: Any) -> bytes:
    out = io.BytesIO()
    entity_writer(type(header))(out, header)
    entity_writer(type(body))(out, body)
    return out.getvalue()


def _record_batch(variant: int) -> bytes:
    records = [Record(key=b"k%d" % i, value=b"fuzz value %d" % i, headers=[("h", b"v")]) for i in range(3)]
    return build_batch(records, compression=_CODECS[variant % len(_CODECS)])


def _primitive(name: str, kafka_type: str, variant: int) -> Any:
    """A plausible value for a field, chosen by its name and Kafka type."""
    if kafka_type in ("records", "bytes"):
        return _record_batch(variant) if kafka_type == "records" else b"\x00\x01fuzz"
    if kafka_type == "string":
        if "group" in name:
            return FUZZ_GROUP
        if "topic" in name or name == "name":
            return FUZZ_TOPIC
        if "member" in name or "instance" in name:
            return ""
        if "protocol_type" in name:
            return "consumer"
        if "key" in name and "config" not in name:
            return "cleanup.policy"
        return "fuzz"
    if kafka_type == "bool":
        return variant % 2 == 0
    if kafka_type == "uuid":
        return uuid.UUID(int=0)
    if kafka_type in ("timedelta_i32", "timedelta_i64"):
        return datetime.timedelta(milliseconds=100)
    if kafka_type == "datetime_i64":
        return datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    if kafka_type == "error_code":
        return 0
    if "partition" in name and "count" not in name:
        return 0
    if name in ("count", "num_partitions", "replication_factor"):
        return 1 if name != "replication_factor" else -1
    if "producer_id" in name or "epoch" in name or name == "replica_id":
        return -1
    if name == "acks":
        return -1
    return 1


def populate(cls: type, variant: int = 0, depth: int = 0) -> Any:
    """An instance of kio entity `cls` with every field set plausibly, every array holding one element."""
    values: dict[str, Any] = {}
    for f in fields(cls):
        kind = classify_field(f)
        if isinstance(kind, EntityTupleField):
            values[f.name] = () if depth > 4 else (populate(kind.type_, variant, depth + 1),)
        elif isinstance(kind, EntityField):
            values[f.name] = populate(kind.type_, variant, depth + 1)
        else:
            value = _primitive(f.name, f.metadata.get("kafka_type", ""), variant)
            values[f.name] = (value,) if kind.is_array else value
    return build(cls, values)


def header_for(api_key: int, api_version: int, correlation_id: int = 1) -> Any:
    cls = request_class(api_key, api_version).__header_schema__
    return build(cls, {"request_api_key": api_key, "request_api_version": api_version,
                       "correlation_id": correlation_id, "client_id": "kafkascope-fuzz"})


def seeds(advertised: dict[int, tuple[int, int]], variants: int = 2) -> Iterator[Seed]:
    """`variants` seeds for every (api_key, version) in `advertised` ({api_key: (min, max)})."""
    for api_key, (lo, hi) in sorted(advertised.items()):
        for version in range(lo, hi + 1):
            try:
                cls = request_class(api_key, version)
            except UnknownEntity:
                continue  # advertised but without a schema: nothing to seed (ApiVersions tests catch this)
            for variant in range(variants):
                yield Seed(api_key, version, header_for(api_key, version), populate(cls, variant))


def frame_with_size(frame: bytes) -> bytes:
    return struct.pack(">i", len(frame)) + frame
