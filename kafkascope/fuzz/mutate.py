"""Mutations of seed requests: at the field level (each field set to its boundary values, then encoded with
the real schema) and at the byte level (bit flips, boundary integers, truncation, insertion, wrong sizes).

Everything is drawn from a `random.Random` passed in, so a run is reproduced by its seed.
"""

from __future__ import annotations

import dataclasses
import datetime
import random
import struct
import uuid
from collections.abc import Iterator
from typing import Any

from kio.serial._introspect import EntityField, EntityTupleField, classify_field, is_optional

from broker.log.records import CRC_START, HEADER_SIZE
from kafkascope.fuzz.seeds import Seed
from kafkascope.fuzz.seeds import frame_with_size as _sized

_INT_BOUNDS = {
    "int8": (-128, -1, 0, 127),
    "int16": (-32768, -1, 0, 32767),
    "int32": (-2**31, -1, 0, 2**31 - 1, 0x7FFFFFF0),
    "int64": (-2**63, -1, 0, 2**63 - 1),
    "uint8": (0, 255), "uint16": (0, 65535), "uint32": (0, 2**32 - 1), "uint64": (0, 2**64 - 1),
    "float64": (0.0, -1.0, float("inf"), float("nan")),
}
_MS = datetime.timedelta(milliseconds=1)
_BOUNDARY_I32 = (-1, 0, 0x7FFFFFFF, -0x80000000, 0x7FFFFFF0)
_BOUNDARY_I16 = (-1, 0x7FFF, -0x8000)
# Unsigned varints that decode to a huge count (0x7fffffff + 1 in compact encoding) or overflow.
_BIG_VARINTS = (b"\xff\xff\xff\xff\x07", b"\x80\x80\x80\x80\x08", b"\xff\xff\xff\xff\x0f", b"\xff" * 6)


def boundary_values(kafka_type: str, optional: bool) -> tuple[Any, ...]:
    """The values a field of this type is set to by field-level mutation."""
    values: tuple[Any, ...]
    if kafka_type in _INT_BOUNDS:
        values = _INT_BOUNDS[kafka_type]
    elif kafka_type == "timedelta_i32":
        values = tuple(v * _MS for v in _INT_BOUNDS["int32"])
    elif kafka_type == "timedelta_i64":
        values = (-_MS, 0 * _MS, datetime.timedelta(days=10**6))
    elif kafka_type == "datetime_i64":
        values = (datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC),
                  datetime.datetime(9999, 1, 1, tzinfo=datetime.UTC))
    elif kafka_type == "string":
        values = ("", "x" * 300, "é\u0000\ufffd", "a" * 32767)
    elif kafka_type in ("bytes", "records"):
        values = (b"", b"\xff" * 61, bytes(range(256)))
    elif kafka_type == "uuid":
        values = (uuid.UUID(int=0), uuid.UUID(int=2**128 - 1))
    elif kafka_type == "bool":
        values = (True, False)
    else:
        values = ()
    return values + ((None,) if optional else ())


def _leaves(entity: Any, path: tuple = ()) -> Iterator[tuple[tuple, str, bool, bool]]:
    """(path, kafka type, optional, is array) of every field under `entity`, arrays included."""
    for f in dataclasses.fields(entity):
        kind = classify_field(f)
        value = getattr(entity, f.name)
        here = path + (f.name,)
        optional = is_optional(f)
        if isinstance(kind, EntityTupleField):
            yield here, "array", optional, True
            for i, item in enumerate(value or ()):
                yield from _leaves(item, here + (i,))
        elif isinstance(kind, EntityField):
            if value is not None:
                yield from _leaves(value, here)
        else:
            yield here, f.metadata.get("kafka_type", ""), optional, kind.is_array


def _replace(node: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    step, rest = path[0], path[1:]
    if isinstance(step, int):
        items = list(node)
        items[step] = _replace(items[step], rest, value)
        return tuple(items)
    # object.__setattr__ on a copy: kio entities are frozen and `replace` would re-run field validation
    clone = dataclasses.replace(node)
    object.__setattr__(clone, step, _replace(getattr(node, step), rest, value))
    return clone


def _get(node: Any, path: tuple) -> Any:
    for step in path:
        node = node[step] if isinstance(step, int) else getattr(node, step)
    return node


def field_mutants(seed: Seed) -> Iterator[bytes]:
    """Every single-field boundary mutation of `seed` that its schema can encode (frames without size)."""
    for path, kafka_type, optional, is_array in _leaves(seed.body):
        if is_array:
            current = _get(seed.body, path) or ()
            candidates: tuple[Any, ...] = ((), None, tuple(current) * 50)
        else:
            candidates = boundary_values(kafka_type, optional)
        for value in candidates:
            frame = _encode_or_none(seed, _replace(seed.body, path, value))
            if frame is not None:
                yield frame


def _encode_or_none(seed: Seed, body: Any) -> bytes | None:
    try:
        return seed.encode(body)
    except Exception:  # the schema cannot carry this value (out of range for the type, null not allowed)
        return None


def mutate_records(batch: bytes, rng: random.Random) -> bytes:
    """A record batch with its header or records section damaged and the CRC recomputed, so the damage
    reaches what lies behind the CRC check (decompression, record decoding)."""
    from crc32c import crc32c

    buf = bytearray(batch)
    if len(buf) < HEADER_SIZE:
        return bytes(buf)
    choice = rng.randrange(4)
    if choice == 0:  # a header integer field at a boundary
        pos = rng.choice((8, 12, 23, 57))  # batchLength, leaderEpoch, lastOffsetDelta, recordCount
        struct.pack_into(">i", buf, pos, rng.choice(_BOUNDARY_I32))
    elif choice == 1:  # attributes: another codec, control or transactional bits
        struct.pack_into(">h", buf, 21, rng.randrange(0, 0x40))
    elif choice == 2 and len(buf) > HEADER_SIZE:  # bytes of the (possibly compressed) records section
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(HEADER_SIZE, len(buf))
            buf[i] = rng.randrange(256)
    else:  # a declared size inside the compressed stream: patch 4..8 bytes after the header
        i = rng.randrange(HEADER_SIZE, max(HEADER_SIZE + 1, min(len(buf) - 8, HEADER_SIZE + 24)))
        struct.pack_into(">q", buf, i, rng.choice((2**40, 2**62, 177941562304)))
    if rng.random() < 0.8:
        struct.pack_into(">I", buf, 17, crc32c(memoryview(buf)[CRC_START:]))
    return bytes(buf)


def records_mutant(seed: Seed, rng: random.Random) -> bytes | None:
    """`seed` with one of its `records` fields damaged (None when it has none)."""
    paths = [p for p, t, _o, a in _leaves(seed.body) if t == "records" and not a]
    if not paths:
        return None
    path = rng.choice(paths)
    current = _get(seed.body, path)
    if not current:
        return None
    return _encode_or_none(seed, _replace(seed.body, path, mutate_records(current, rng)))


def mutate_bytes(frame: bytes, rng: random.Random) -> bytes:
    """One or more byte-level mutations of a frame (without size prefix); the api key and version stay."""
    buf = bytearray(frame)
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        if len(buf) <= 4:
            break
        op = rng.randrange(7)
        i = rng.randrange(4, len(buf))
        if op == 0:
            buf[i] ^= 1 << rng.randrange(8)
        elif op == 1 and len(buf) - i >= 4:
            struct.pack_into(">i", buf, i, rng.choice(_BOUNDARY_I32))
        elif op == 2 and len(buf) - i >= 2:
            struct.pack_into(">h", buf, i, rng.choice(_BOUNDARY_I16))
        elif op == 3:
            buf[i:i] = rng.choice(_BIG_VARINTS)
        elif op == 4:
            del buf[i:]
        elif op == 5:
            buf[i:i] = rng.randbytes(rng.randint(1, 16))
        else:
            del buf[i:i + rng.randint(1, 8)]
    return bytes(buf)


def sized(frame: bytes, rng: random.Random, wrong_size_rate: float = 0.05) -> tuple[bytes, bool]:
    """The frame with its size prefix; sometimes a wrong one. Returns (bytes, size_claims_more_than_sent)."""
    if rng.random() >= wrong_size_rate:
        return _sized(frame), False
    claimed = rng.choice((len(frame) + rng.randint(1, 64), len(frame) - rng.randint(1, 8), 0x7FFFFFFF, -1, 0))
    return struct.pack(">i", claimed) + frame, claimed > len(frame)


def campaign(seeds: list[Seed], rng: random.Random, count: int) -> Iterator[tuple[bytes, bool]]:
    """`count` sized frames: every seed once unmutated, then field-level boundary mutants of every seed
    interleaved with random byte-level and record-batch mutations."""
    emitted = 0
    for seed in seeds:
        if emitted >= count:
            return
        emitted += 1
        yield _sized(seed.encode()), False
    field_iters = [field_mutants(s) for s in seeds]
    while emitted < count:
        seed_index = rng.randrange(len(seeds))
        seed = seeds[seed_index]
        roll = rng.random()
        frame: bytes | None
        if roll < 0.35:
            frame = next(field_iters[seed_index], None)
            if frame is None:
                field_iters[seed_index] = field_mutants(seed)  # start the boundary values over
                frame = seed.encode()
        elif roll < 0.5:
            frame = records_mutant(seed, rng) or seed.encode()
        else:
            frame = seed.encode()
        if roll >= 0.35 or rng.random() < 0.3:
            frame = mutate_bytes(frame, rng)
        emitted += 1
        yield sized(frame, rng)
