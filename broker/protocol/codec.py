"""Framing and kio (de)serialisation, version-independent.

Handlers speak plain dicts keyed by kio's snake_case field names; `build` turns such a dict into the kio
response dataclass of whichever version the client asked for, dropping fields that version lacks and
converting milliseconds, error codes and timestamps into kio's types. That keeps one code path per API.
"""

from __future__ import annotations

import datetime
import io
import struct
from collections.abc import Callable, Mapping
from dataclasses import MISSING, fields
from functools import cache, partial
from typing import Any, cast

from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer
from kio.serial._implicit_defaults import get_implicit_default
from kio.serial._introspect import EntityField, EntityTupleField, classify_field
from kio.static.primitive import i32
from kio.static.protocol import RequestPayload, ResponsePayload

from broker.protocol import fetch_encoder, metadata_encoder, produce_encoder
from broker.protocol.validate import walker

PRODUCE_KEY, FETCH_KEY, METADATA_KEY = 0, 1, 3
_UTC = datetime.UTC
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=_UTC)


class UnparseableRequest(Exception):
    """The frame is not a request we can decode; Kafka closes the connection."""


def ms(value: datetime.timedelta | datetime.datetime | int | None) -> int:
    """kio timedelta/datetime (or plain int) → integer milliseconds; None → -1."""
    if value is None:
        return -1
    if isinstance(value, datetime.timedelta):
        return value // datetime.timedelta(milliseconds=1)
    if isinstance(value, datetime.datetime):
        return (value - _EPOCH) // datetime.timedelta(milliseconds=1)
    return int(value)


@cache
def request_class(api_key: int, api_version: int) -> type:
    return load_request_schema(api_key, api_version)


@cache
def response_class(api_key: int, api_version: int) -> type:
    return load_response_schema(api_key, api_version)


def parse_request(frame: bytes | memoryview) -> tuple[Any, Any]:
    """Decode (header, body) of one request frame (without its length prefix)."""
    api_key, api_version = struct.unpack_from(">hh", frame, 0)
    try:
        cls: type[RequestPayload] = request_class(api_key, api_version)
        walker(cls)(frame)  # before kio: its native reader trusts the counts in the frame (validate.py)
        header, n = entity_reader(cls.__header_schema__)(frame, 0)
        body, _m = entity_reader(cls)(frame, n)
    except Exception as e:  # the walker's InvalidFrame; kio raises many types (index errors, decode errors, KeyError on unknown tags)
        raise UnparseableRequest(f"api_key={api_key} v{api_version}: {e!r}") from e
    # Trailing bytes are ignored, as Kafka does: librdkafka's "all topics" Metadata v10+ request leaves
    # three stale bytes of its array-count placeholder after the body.
    return header, body


# ---------------------------------------------------------------- dict → kio dataclass

def _convert_primitive(kafka_type: str, optional: bool) -> Callable[[Any], Any] | None:
    if kafka_type == "timedelta_i32" or kafka_type == "timedelta_i64":
        return lambda v: v if isinstance(v, datetime.timedelta) else datetime.timedelta(milliseconds=v)
    if kafka_type == "datetime_i64":
        def to_dt(v: Any) -> Any:
            if v is None or isinstance(v, datetime.datetime):
                return v
            if v < 0:
                return None if optional else _EPOCH
            return _EPOCH + datetime.timedelta(milliseconds=v)
        return to_dt
    if kafka_type == "error_code":
        return lambda v: v if isinstance(v, ErrorCode) else ErrorCode(int(v))
    return None


def _identity(v: Any) -> Any:
    return v


def _each(conv: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda v: None if v is None else tuple(conv(x) for x in v)


def _nullable(conv: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda v: None if v is None else conv(v)


@cache
def _plan(cls: type) -> tuple[tuple[str, Callable[[Any], Any] | None, bool, Any], ...]:
    """Per field: (name, converter, has_default, implicit default)."""
    plan = []
    for f in fields(cls):
        kind = classify_field(f)
        optional = "None" in str(f.type)
        conv: Callable[[Any], Any] | None
        if isinstance(kind, EntityTupleField):
            conv = _each(partial(build, kind.type_))
        elif isinstance(kind, EntityField):
            conv = _nullable(partial(build, kind.type_))
        else:
            conv = _convert_primitive(f.metadata.get("kafka_type", ""), optional)
            if kind.is_array:
                conv = _each(conv or _identity)
        has_default = f.default is not MISSING or f.default_factory is not MISSING
        implicit = None
        if not has_default:
            if kind.is_array:
                implicit = ()
            elif isinstance(kind, EntityField):
                implicit = None
            else:
                # f.type may be a postponed (str) annotation or a generic alias, not a class: whatever
                # get_implicit_default cannot take raises, and the field gets None below.
                field_type: Any = f.type
                try:
                    implicit = get_implicit_default(field_type)
                except Exception:
                    implicit = None
        plan.append((f.name, conv, has_default, implicit))
    return tuple(plan)


def build(cls: type, data: Mapping[str, Any] | Any) -> Any:
    """Build kio entity `cls` from a dict (extra keys ignored; missing keys take the schema default)."""
    if not isinstance(data, Mapping):
        return data  # already an entity
    kwargs = {}
    for name, conv, has_default, implicit in _plan(cls):
        if name in data:
            v = data[name]
            kwargs[name] = conv(v) if conv is not None else v
        elif not has_default:
            kwargs[name] = implicit
    return cls(**kwargs)


def encode_response(api_key: int, api_version: int, correlation_id: int,
                    body: Mapping[str, Any] | Any) -> bytes | list[bytes | memoryview]:
    """Serialise a response (header + body) with its int32 size prefix: one buffer, or buffers to gather."""
    if isinstance(body, Mapping):
        if api_key == FETCH_KEY and fetch_encoder.MIN_VERSION <= api_version <= fetch_encoder.MAX_VERSION:
            return fetch_encoder.encode_fetch_response(api_version, correlation_id, body)
        if api_key == PRODUCE_KEY and produce_encoder.MIN_VERSION <= api_version <= produce_encoder.MAX_VERSION:
            return produce_encoder.encode_produce_response(api_version, correlation_id, body)
        if api_key == METADATA_KEY and api_version <= metadata_encoder.MAX_VERSION:
            return metadata_encoder.encode_metadata_response(api_version, correlation_id, body)
    return encode_with_kio(api_key, api_version, correlation_id, body)


def encode_with_kio(api_key: int, api_version: int, correlation_id: int, body: Mapping[str, Any] | Any) -> bytes:
    """The generic path: build the kio dataclass for this version and serialise it."""
    cls: type[ResponsePayload] = response_class(api_key, api_version)
    value = build(cls, body)
    out = io.BytesIO()
    out.write(b"\0\0\0\0")
    header_cls = cls.__header_schema__
    # cast, not i32(...): the id is echoed from the request's int32 header field, and the phantom type's
    # constructor would add a range check the encoder never had.
    entity_writer(header_cls)(out, header_cls(correlation_id=cast(i32, correlation_id)))
    entity_writer(cls)(out, value)
    buf = out.getbuffer()
    struct.pack_into(">i", buf, 0, len(buf) - 4)
    return bytes(buf)
