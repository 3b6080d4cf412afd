"""Structural validation of a request frame before kio's native reader sees it.

kio 0.6.5 (the newest release) parses in Rust and sizes its vectors from the array counts in the frame: a
count of 0x7fffffff inside a 60-byte request makes it allocate tens of gigabytes, and a failed allocation in
Rust aborts the whole process. No kio option bounds it, so every frame is first walked here, field by field
against the request schema, with every length checked against the bytes actually received and every null
checked against the schema's nullability. A frame that passes has counts that its bytes really hold, so
kio's allocations are bounded by the frame size.

The walkers are generated Python source, one function per schema entity, compiled once per API version;
runs of fixed-size fields collapse into one bounds check (a Produce request is walked in ~3 µs).
"""

from __future__ import annotations

from dataclasses import fields
from functools import cache
from typing import Any

from kio.serial._introspect import EntityField, EntityTupleField, classify_field, get_field_tag, is_optional

from common.wire import WireError, read_uvarint

_FIXED = {"int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint8": 1, "uint16": 2, "uint32": 4, "uint64": 8,
          "float64": 8, "bool": 1, "uuid": 16, "error_code": 2, "timedelta_i32": 4, "timedelta_i64": 8,
          "datetime_i64": 8}


class InvalidFrame(WireError):
    """The frame does not match its request schema (named field and offset in the message)."""


def _i16(b: Any, pos: int) -> int:
    v = (b[pos] << 8) | b[pos + 1]
    return v - 0x10000 if v & 0x8000 else v


def _i32(b: Any, pos: int) -> int:
    v = (b[pos] << 24) | (b[pos + 1] << 16) | (b[pos + 2] << 8) | b[pos + 3]
    return v - 0x100000000 if v & 0x80000000 else v


class _Gen:
    """Writes one walker function per entity type into a shared namespace."""

    def __init__(self) -> None:
        self.src: list[str] = []
        self.names: dict[tuple[type, bool], str] = {}

    def entity(self, cls: Any, is_header: bool = False) -> str:  # a kio entity class
        key = (cls, is_header)
        if key in self.names:
            return self.names[key]
        name = f"_v{len(self.names)}"
        self.names[key] = name
        flexible = cls.__flexible__
        body: list[str] = []
        fixed = 0
        tagged: list[tuple[int, Any]] = []
        for f in fields(cls):
            tag = get_field_tag(f)
            if tag is not None:
                tagged.append((tag, f))
                continue
            legacy_string = is_header and f.name == "client_id"  # always a legacy nullable string (KIP-482)
            size = self._fixed_size(f)
            if size is not None and not legacy_string:
                fixed += size
                continue
            if fixed:
                body += [f"p += {fixed}", f"if p > end: fail({f.name!r}, p)"]
                fixed = 0
            body += self.field(f, flexible and not legacy_string, optional=legacy_string or is_optional(f))
        if fixed:
            body += [f"p += {fixed}", "if p > end: fail('fields', p)"]
        if flexible:
            body += self._tags(tagged)
        lines = [f"def {name}(b, p, end):", *("    " + line for line in body), "    return p"]
        self.src.append("\n".join(lines))
        return name

    @staticmethod
    def _fixed_size(f: Any) -> int | None:
        kind = classify_field(f)
        if kind.is_array or isinstance(kind, EntityField):
            return None
        return _FIXED.get(f.metadata.get("kafka_type", ""))

    def field(self, f: Any, flexible: bool, optional: bool, e: str = "end") -> list[str]:
        """Lines walking one field; `e` names the variable holding where the field's bytes must end."""
        kind = classify_field(f)
        n = f.name
        if kind.is_array:
            if isinstance(kind, EntityTupleField):
                item = [f"p = {self.entity(kind.type_)}(b, p, {e})"]
            else:
                item = self._primitive(f, flexible, False, e)
            return self._array(n, flexible, optional, item, e)
        if isinstance(kind, EntityField):
            inner = self.entity(kind.type_)
            if not optional:
                return [f"p = {inner}(b, p, {e})"]
            # KIP-893 nullable struct: an int8 marker, -1 null, 1 present
            return [f"if p >= {e}: fail({n!r}, p)", "m = b[p]", "p += 1",
                    f"if m == 1: p = {inner}(b, p, {e})", f"elif m != 255: fail({n!r}, p)"]
        return self._primitive(f, flexible, optional, e)

    @staticmethod
    def _primitive(f: Any, flexible: bool, optional: bool, e: str) -> list[str]:
        t, n = f.metadata.get("kafka_type", ""), f.name
        if t in _FIXED:
            return [f"p += {_FIXED[t]}", f"if p > {e}: fail({n!r}, p)"]
        if t not in ("string", "bytes", "records"):
            raise NotImplementedError(f"kafka type {t!r} of {n}")
        on_null = "pass" if optional else f"fail({n!r} + ' is null', p)"
        if flexible:  # compact: length + 1, 0 for null
            return [*_read_uvarint("n", e), "if n == 0:", f"    {on_null}", "else:",
                    "    p += n - 1", f"    if p > {e}: fail({n!r}, p)"]
        width, reader = (2, "i16") if t == "string" else (4, "i32")
        return [f"if p + {width} > {e}: fail({n!r}, p)", f"n = {reader}(b, p)", f"p += {width}",
                "if n == -1:", f"    {on_null}", f"elif n < 0: fail({n!r} + ' length', p)",
                "else:", "    p += n", f"    if p > {e}: fail({n!r}, p)"]

    @staticmethod
    def _array(n: str, flexible: bool, optional: bool, item: list[str], e: str) -> list[str]:
        if flexible:  # compact: count + 1, 0 for null
            head = [*_read_uvarint("c", e), "c -= 1"]
        else:
            head = [f"if p + 4 > {e}: fail({n!r}, p)", "c = i32(b, p)", "p += 4"]
        on_null = "pass" if optional else f"fail({n!r} + ' is null', p)"
        # every element takes at least one byte: a count above the bytes left cannot be real
        return [*head, "if c == -1:", f"    {on_null}", f"elif c < 0 or c > {e} - p: fail({n!r} + ' count', p)",
                "else:", "    for _ in range(c):", *("        " + line for line in item)]

    def _tags(self, tagged: list[tuple[int, Any]]) -> list[str]:
        lines = [*_read_uvarint("c", "end"), "if c > end - p: fail('tagged fields', p)", "for _ in range(c):",
                 "    t, p = uvarint(b, p, end)", "    s, p = uvarint(b, p, end)",
                 "    stop = p + s", "    if stop > end: fail('tagged field', p)"]
        for i, (tag, f) in enumerate(tagged):
            inner = self.field(f, True, optional=is_optional(f), e="stop")
            lines += [f"    {'if' if i == 0 else 'elif'} t == {tag}:", *("        " + line for line in inner)]
        lines += ["    p = stop"]
        return lines


def _read_uvarint(var: str, e: str) -> list[str]:
    """Lines reading an unsigned varint into `var`; the one-byte case (almost every count) inline."""
    return [f"if p < {e} and b[p] < 128:", f"    {var} = b[p]", "    p += 1", "else:",
            f"    {var}, p = uvarint(b, p, {e})"]


def _fail(name: str, pos: int) -> None:
    raise InvalidFrame(f"{name} runs past or breaks the frame at byte {pos}")


@cache
def walker(request_cls: Any) -> Any:
    """A function (frame, start) → end position, raising InvalidFrame, for header + body of this request."""
    gen = _Gen()
    header = gen.entity(request_cls.__header_schema__, is_header=True)
    body = gen.entity(request_cls)
    namespace: dict[str, Any] = {"uvarint": read_uvarint, "i16": _i16, "i32": _i32, "fail": _fail}
    exec(compile("\n\n".join(gen.src), f"<walker {request_cls.__name__}>", "exec"), namespace)
    walk_header, walk_body = namespace[header], namespace[body]

    def walk(frame: Any) -> int:
        end = len(frame)
        try:
            return walk_body(frame, walk_header(frame, 0, end), end)
        except InvalidFrame:
            raise
        except WireError as e:  # a varint from common.wire: callers expect InvalidFrame
            raise InvalidFrame(str(e)) from None

    return walk
