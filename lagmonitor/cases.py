"""The offline case format of `kafkascope lag evaluate`: validation and evaluation (pure)."""

from __future__ import annotations

from typing import Any

from lagmonitor.rules import ConsumerOffset, evaluate_partition

_INT_FIELDS = ("current_lag", "now_ms", "allowed_lag")


class CaseError(ValueError):
    """An invalid case; the message names the case index and the field."""

    def __init__(self, index: int | None, field: str, problem: str) -> None:
        where = f"case {index}: " if index is not None else ""
        super().__init__(f"{where}field {field!r}: {problem}")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _entry(index: int, pos: int, raw: Any, seen_entry: bool) -> ConsumerOffset | None:
    name = f"window[{pos}]"
    if raw is None:
        if seen_entry:
            raise CaseError(index, name, "null is only allowed before the first commit (leading nulls)")
        return None
    if not isinstance(raw, dict):
        raise CaseError(index, name, "expected an object {offset, timestamp_ms, lag} or null")
    for key in ("offset", "timestamp_ms"):
        if not _is_int(raw.get(key)):
            raise CaseError(index, f"{name}.{key}", "expected an integer")
    lag = raw.get("lag")
    if "lag" not in raw or not (lag is None or _is_int(lag)):
        raise CaseError(index, f"{name}.lag", "expected an integer or null")
    return ConsumerOffset(raw["offset"], raw["timestamp_ms"], raw["timestamp_ms"], lag, pos)


def parse_case(index: int, raw: Any) -> dict:
    """Check one case and return evaluate_partition's keyword arguments."""
    if not isinstance(raw, dict):
        raise CaseError(index, "(case)", "expected an object")
    window = raw.get("window")
    if not isinstance(window, list):
        raise CaseError(index, "window", "expected a list")
    offsets: list[ConsumerOffset | None] = []
    for pos, e in enumerate(window):
        offsets.append(_entry(index, pos, e, any(o is not None for o in offsets)))
    brokers = raw.get("broker_offsets")
    if not isinstance(brokers, list) or not all(_is_int(b) for b in brokers):
        raise CaseError(index, "broker_offsets", "expected a list of integers")
    for key in _INT_FIELDS:
        if not _is_int(raw.get(key)):
            raise CaseError(index, key, "expected an integer")
    if raw["current_lag"] < 0:
        raise CaseError(index, "current_lag", "must be ≥ 0")
    mc = raw.get("minimum_complete")
    if not isinstance(mc, int | float) or isinstance(mc, bool):
        raise CaseError(index, "minimum_complete", "expected a number")
    return {"offsets": offsets, "broker_offsets": brokers, "current_lag": raw["current_lag"],
            "now_s": raw["now_ms"] // 1000, "allowed_lag": raw["allowed_lag"], "minimum_complete": float(mc)}


def evaluate_cases(raw: Any) -> list[dict]:
    """Validate every case first, then evaluate: [{"status", "complete"}] in input order."""
    if not isinstance(raw, list):
        raise CaseError(None, "(document)", "expected a JSON list of cases")
    parsed = [parse_case(i, c) for i, c in enumerate(raw)]
    out = []
    for kwargs in parsed:
        status, complete, _, _ = evaluate_partition(**kwargs)
        out.append({"status": status.name, "complete": complete})
    return out
