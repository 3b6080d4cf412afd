"""Burrow's evaluator rules (docs/lag-monitor.md §4): a numbered table covering every branch and ordering consequence."""

from __future__ import annotations

import pytest

from lagmonitor.cases import evaluate_cases
from lagmonitor.rules import (
    ConsumerOffset,
    PartitionStatus,
    Status,
    group_status,
    not_found,
    problems_only,
)


def w(*entries):
    """Window entries as (offset, timestamp_ms, lag) tuples, or None for a leading null slot."""
    return [None if e is None else {"offset": e[0], "timestamp_ms": e[1], "lag": e[2]} for e in entries]


def case(window, broker, current_lag, now_s, allowed_lag=0, minimum_complete=0.0, now_ms=None):
    return {"window": window, "broker_offsets": broker, "current_lag": current_lag,
            "now_ms": now_s * 1000 if now_ms is None else now_ms, "allowed_lag": allowed_lag,
            "minimum_complete": minimum_complete}


MOVING_ZERO_FIRST = w((1000, 100_000, 0), (2000, 200_000, 50), (3000, 300_000, 100), (4000, 400_000, 150),
                      (5000, 500_000, 200))
MOVING_NONZERO = w((1000, 100_000, 50), (2000, 200_000, 100), (3000, 300_000, 150), (4000, 400_000, 200),
                   (5000, 500_000, 250))
STILL_ZERO_FIRST = w((1000, 100_000, 0), (1000, 200_000, 50), (1000, 300_000, 100), (1000, 400_000, 150),
                     (1000, 500_000, 200))
STILL_NONZERO = w((1000, 100_000, 100), (1000, 200_000, 150), (1000, 300_000, 200), (1000, 400_000, 250),
                  (1000, 500_000, 300))
UNRECOVERED_REWIND = w((1000, 100_000, 100), (2000, 200_000, 150), (3000, 300_000, 200), (2000, 400_000, 1250),
                       (2500, 500_000, 900))
RECOVERED_REWIND = w((1000, 100_000, 100), (2000, 200_000, 150), (3000, 300_000, 200), (2000, 400_000, 1250),
                     (4000, 500_000, 300))

# (number, what it shows, case, expected status, expected complete)
TABLE = [
    (0, "never-created ring: OK, complete 0", case([], [10], 0, 600), "OK", 0.0),
    (1, "all-null ring: OK, complete 1/len (Burrow keeps the last null slot)", case([None] * 10, [10], 0, 600),
     "OK", 0.1),
    (2, "leading nulls: complete = kept/len", case([None] * 5 + MOVING_NONZERO, [5250], 250, 600), "WARN", 0.5),
    (3, "complete below minimum-complete: OK without evaluation",
     case([None] * 5 + MOVING_NONZERO, [5250], 250, 1000, minimum_complete=0.6), "OK", 0.5),
    (4, "complete equal to minimum-complete is evaluated",
     case([None] * 5 + MOVING_NONZERO, [5250], 250, 1000, minimum_complete=0.5), "STOP", 0.5),
    (5, "current_lag 0: OK although the timestamps say stopped", case(MOVING_NONZERO, [5000], 0, 10_000), "OK", 1.0),
    (6, "current_lag == allowed_lag: OK although stopped",
     case(MOVING_NONZERO, [5100], 100, 10_000, allowed_lag=100), "OK", 1.0),
    (7, "stop needs strictly greater: age 400 s == span 400 s is not stopped", case(MOVING_ZERO_FIRST, [5200], 200, 900),
     "OK", 1.0),
    (8, "STOP beats zero-lag history (#290)", case(MOVING_ZERO_FIRST, [5200], 200, 1000), "STOP", 1.0),
    (9, "STOP with lag always non-zero", case(MOVING_NONZERO, [5250], 250, 1000), "STOP", 1.0),
    (10, "a recent broker offset below the last commit cancels STOP (#338), order of B irrelevant",
     case(MOVING_ZERO_FIRST, [5300, 4900, 5200], 200, 1000), "OK", 1.0),
    (11, "a recent broker offset equal to the last commit also cancels STOP",
     case(MOVING_NONZERO, [5000, 5250], 250, 1000), "WARN", 1.0),
    (12, "single commit: any positive age is STOP", case(w((500, 100_000, 10)), [510], 10, 101), "STOP", 1.0),
    (13, "single commit of age 0: not stopped, trivially stalled", case(w((500, 100_000, 10)), [510], 10, 100),
     "STALL", 1.0),
    (14, "zero lag in the window cancels STALL", case(STILL_ZERO_FIRST, [1200], 200, 600), "OK", 1.0),
    (15, "STALL when the offset never moves and lag is never zero", case(STILL_NONZERO, [1300], 300, 600), "STALL",
     1.0),
    (16, "STALL also with a constant lag",
     case(w(*[(1000, t * 100_000, 100) for t in range(1, 6)]), [1100], 100, 600), "STALL", 1.0),
    (17, "unrecovered rewind: REWIND", case(UNRECOVERED_REWIND, [3400], 900, 600), "REWIND", 1.0),
    (18, "recovered rewind falls through to the later rules (lag decreased: OK)",
     case(RECOVERED_REWIND, [4300], 300, 600), "OK", 1.0),
    (19, "recovered rewind falls through to WARN",
     case(w((1000, 100_000, 100), (3000, 200_000, 200), (2000, 300_000, 1200), (3500, 400_000, 1300),
            (4000, 500_000, 1400)), [5400], 1400, 600), "WARN", 1.0),
    (20, "REWIND is flagged even with zero lag earlier in the window (#716)",
     case(w((1000, 100_000, 0), (3000, 200_000, 10), (2000, 300_000, 1010)), [3010], 1010, 400), "REWIND", 1.0),
    (21, "only the first drop is examined: a later unrecovered drop is not REWIND",
     case(w((1000, 100_000, 100), (3000, 200_000, 100), (2000, 300_000, 1100), (3000, 400_000, 100),
            (2500, 500_000, 600)), [3100], 600, 600), "OK", 1.0),
    (22, "STOP is checked before REWIND", case(UNRECOVERED_REWIND, [3400], 900, 5000), "STOP", 1.0),
    (23, "a broker offset ≤ the last commit lets an unrecovered rewind through as REWIND",
     case(UNRECOVERED_REWIND, [2500, 3400], 900, 5000), "REWIND", 1.0),
    (24, "WARN: offsets move, lag never zero and never decreases", case(MOVING_NONZERO, [5250], 250, 600), "WARN",
     1.0),
    (25, "one decrease anywhere keeps it out of WARN",
     case(w((1000, 100_000, 50), (2000, 200_000, 100), (3000, 300_000, 90), (4000, 400_000, 200),
            (5000, 500_000, 250)), [5250], 250, 600), "OK", 1.0),
    (26, "rule 5 skips null lags: 100, null, 150 is not a decrease",
     case(w((1000, 100_000, 100), (2000, 200_000, None), (3000, 300_000, 150)), [3150], 150, 350), "WARN", 1.0),
    (27, "rule 5 compares across nulls: 200, null, 100 is a decrease",
     case(w((1000, 100_000, 200), (2000, 200_000, None), (3000, 300_000, 100)), [3100], 100, 350), "OK", 1.0),
    (28, "all-null lags count as always non-zero (rule 1 skips nulls): STALL",
     case(w((1000, 100_000, None), (1000, 200_000, None)), [1100], 100, 250), "STALL", 1.0),
    (29, "allowed-lag: lag ≤ allowed counts as zero for rule 1 (no WARN)",
     case(MOVING_NONZERO, [5250], 250, 600, allowed_lag=50), "OK", 1.0),
    (30, "allowed-lag: all lags above it still WARN", case(MOVING_NONZERO, [5250], 250, 600, allowed_lag=49), "WARN",
     1.0),
    (31, "now is truncated to whole seconds: 900.999 s is still not stopped",
     case(MOVING_ZERO_FIRST, [5200], 200, 0, now_ms=900_999), "OK", 1.0),
    (32, "moving window with an early zero lag, not yet stopped: OK",
     case(MOVING_ZERO_FIRST, [5200], 200, 600), "OK", 1.0),
]


@pytest.mark.parametrize("number,why,c,status,complete", TABLE, ids=[f"{t[0]:02d}" for t in TABLE])
def test_rule_table(number, why, c, status, complete):
    [got] = evaluate_cases([c])
    assert got == {"status": status, "complete": pytest.approx(complete)}, f"case {number}: {why}"


def test_table_is_numbered_in_order():
    assert [t[0] for t in TABLE] == list(range(len(TABLE)))


def test_status_values_are_burrows():
    assert {s.name: s.value for s in Status} == {"NOTFOUND": 0, "OK": 1, "WARN": 2, "ERR": 3, "STOP": 4,
                                                 "STALL": 5, "REWIND": 6}


def part(topic, n, status, lag, complete=1.0):
    end = ConsumerOffset(100, 1, 1, lag)
    return PartitionStatus(topic, n, status, complete, lag, end, end)


@pytest.mark.parametrize("statuses,expected", [
    ([Status.OK, Status.OK], Status.OK),
    ([Status.OK, Status.WARN], Status.WARN),
    ([Status.WARN, Status.STOP], Status.ERR),
    ([Status.STALL, Status.OK], Status.ERR),
    ([Status.REWIND], Status.ERR),
])
def test_group_status_is_worst_partition_capped_at_err(statuses, expected):
    g = group_status("c", "g", [part("t", i, s, 1) for i, s in enumerate(statuses)])
    assert g.status is expected


def test_group_totals_maxlag_complete_and_show_all():
    parts = [part("a", 0, Status.OK, 5), part("a", 1, Status.STOP, 7, complete=0.5), part("b", 0, Status.OK, 7),
             part("b", 1, Status.OK, 0, complete=0.0)]
    full = group_status("c", "g", parts)
    shown = problems_only(full)
    assert (shown.totallag, shown.partition_count, shown.complete) == (19, 4, 0.5)
    assert shown.maxlag is parts[1]  # the first of the tied largest lags wins
    assert shown.partitions == [parts[1]]
    assert full.partitions == parts and (full.status, full.totallag) == (shown.status, shown.totallag)


def test_group_without_partitions_and_not_found():
    empty = group_status("c", "g", [])
    assert (empty.status, empty.complete, empty.maxlag, empty.totallag) == (Status.OK, 0.0, None, 0)
    nf = not_found("c", "g")
    assert (nf.status, nf.complete, nf.partitions, nf.partition_count, nf.maxlag, nf.totallag) == (
        Status.NOTFOUND, 1.0, [], 0, None, 0)
