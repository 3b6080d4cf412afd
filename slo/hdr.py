"""Merging HDR histograms (xmonitor's compressed V2 payloads) into counts arrays, with multiplicity, and exact
percentiles of the merge: the same answers as HdrHistogram's `add` + `get_value_at_percentile`, vectorised.

A merged histogram is a numpy int64 array over the bucket layout of xmonitor.sli_schema.new_histogram()
(1 µs .. 1 h, 3 digits). Percentiles are never averaged: merge first, then read.
"""

from __future__ import annotations

import functools

import numpy as np

from xmonitor.sli_schema import decode_hdr, new_histogram

PERCENTILES = (50.0, 90.0, 99.0, 99.9)


@functools.cache
def _layout() -> tuple[int, np.ndarray, np.ndarray]:
    """(counts_len, lowest equivalent value per index, highest equivalent value per index)."""
    h = new_histogram()
    lo = np.array([h.get_value_from_index(i) for i in range(h.counts_len)], dtype=np.int64)
    hi = np.array([h.get_highest_equivalent_value(int(v)) for v in lo], dtype=np.int64)
    return h.counts_len, lo, hi


def empty() -> np.ndarray:
    return np.zeros(_layout()[0], dtype=np.int64)


def counts_of(payload: bytes) -> np.ndarray:
    """The counts array of one encoded histogram."""
    h = decode_hdr(payload)
    n = _layout()[0]
    if h.counts_len != n:  # another layout: re-record each bucket into ours
        out = new_histogram()
        out.add(h)
        h = out
    return np.ctypeslib.as_array(h.counts)[:n].astype(np.int64)


def merge(payloads_with_multiplicity) -> np.ndarray:
    """Sum of `multiplicity` copies of each payload: iterable of (bytes, int)."""
    acc = empty()
    for payload, k in payloads_with_multiplicity:
        if k:
            acc += counts_of(payload) * int(k)
    return acc


def index_of(value_us: int) -> int:
    h = new_histogram()
    return h._counts_index_for(int(value_us))


def count_le(counts: np.ndarray, threshold_us: int) -> int:
    """Samples whose value is <= threshold (values equivalent to the threshold count as <=)."""
    return int(counts[: index_of(threshold_us) + 1].sum())


def summary(counts: np.ndarray, percentiles=PERCENTILES) -> dict[str, int | None]:
    """count, p50/p90/p99/p99.9 and max in µs, exactly as HdrHistogram reports them (None when empty)."""
    _, lo, hi = _layout()
    total = int(counts.sum())
    out: dict[str, int | None] = {"count": total}
    names = [f"p{p:g}".replace(".", "_") for p in percentiles]
    if total == 0:
        out.update({n: None for n in names} | {"max": None})
        return out
    cum = np.cumsum(counts)
    for name, p in zip(names, percentiles, strict=True):
        target = max(int(min(p, 100.0) * total / 100 + 0.5), 1)
        out[name] = int(hi[int(np.searchsorted(cum, target))])
    out["max"] = int(hi[int(np.nonzero(counts)[0][-1])])
    return out
