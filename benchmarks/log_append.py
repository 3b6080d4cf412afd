"""One partition's appends, leader and follower side: index files written through kept descriptors against one
descriptor for all (which reopens an index file for every entry, as each write did before issue 20's change).

    python -m benchmarks.log_append [--batches 3000] [--records 5] [--value-bytes 1024] [--rounds 5]

Batches of ``--records`` records of ``--value-bytes`` (5 × 1 KiB: the e2e load's batch at 1,000 records/s, so
every append makes an offset-index and a time-index entry at the default index.interval.bytes), appended as
leader to one log, then read back and appended as follower to another. Per side, µs per append, best and worst
of ``--rounds`` rounds (fresh logs in a temporary directory; both settings alternate within each round); ratio
= kept / reopened. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from benchmarks._common import emit_json, fmt, print_table, ratio
from broker.config import LogConfig
from broker.log import index
from broker.log.log import PartitionLog
from broker.log.records import Record, build_batch
from common.clock import ManualClock


def _round(directory: Path, batches: list[bytes], per_batch: int, limit: int) -> tuple[float, float]:
    """(leader, follower) µs per append of `batches` (`per_batch` records each) with at most `limit` index files
    keeping a write descriptor."""
    saved = index.write_descriptors.limit
    index.write_descriptors.limit = limit
    clock = ManualClock()
    leader = PartitionLog("bench", 0, directory / "leader", LogConfig(), clock)
    follower = PartitionLog("bench", 1, directory / "follower", LogConfig(), clock)
    try:
        start = time.perf_counter()
        for b in batches:
            leader.append_as_leader(b, 0)
        leader_us = (time.perf_counter() - start) / len(batches) * 1e6
        copies = [leader.read(i * per_batch, 1 << 20, max_offset=(i + 1) * per_batch) for i in range(len(batches))]
        start = time.perf_counter()
        for data in copies:
            follower.append_as_follower(data)
        follower_us = (time.perf_counter() - start) / len(batches) * 1e6
        return leader_us, follower_us
    finally:
        leader.close()
        follower.close()
        index.write_descriptors.limit = saved


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(prog="python -m benchmarks.log_append", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batches", type=int, default=3000)
    p.add_argument("--records", type=int, default=5)
    p.add_argument("--value-bytes", type=int, default=1024)
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args(argv)
    batches = [build_batch([Record(timestamp=1_000 + i, value=b"x" * args.value_bytes)] * args.records)
               for i in range(args.batches)]
    kept: list[tuple[float, float]] = []
    reopened: list[tuple[float, float]] = []
    for _ in range(args.rounds):
        with tempfile.TemporaryDirectory(prefix="log-append-") as tmp:
            kept.append(_round(Path(tmp) / "kept", batches, args.records, 1024))
            reopened.append(_round(Path(tmp) / "reopened", batches, args.records, 1))
    result = {}
    rows = [("µs per append", "kept descriptors", "reopened per entry", "ratio kept/reopened")]
    for i, side in enumerate(("leader", "follower")):
        k = sorted(x[i] for x in kept)
        o = sorted(x[i] for x in reopened)
        result[side] = {"kept_us": [round(k[0], 2), round(k[-1], 2)], "reopened_us": [round(o[0], 2), round(o[-1], 2)],
                        "ratio_best": ratio(k[0], o[0])}
        rows.append((side, f"{fmt(k[0])}–{fmt(k[-1])}", f"{fmt(o[0])}–{fmt(o[-1])}", fmt(ratio(k[0], o[0]))))
    print(f"{args.batches} batches of {args.records} × {args.value_bytes} B, {args.rounds} rounds (best–worst)")
    print_table(rows)
    emit_json("log_append", {"settings": vars(args), "results": result})
    return result


if __name__ == "__main__":
    main()
