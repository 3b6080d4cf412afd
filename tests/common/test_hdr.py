import random

import pytest

from common.hdr import BENCHMARK_US, LATENCY_US, HdrParams, record_counts


def _params(h) -> HdrParams:
    return HdrParams(h.lowest_trackable_value, h.highest_trackable_value, h.significant_figures)


def test_parameter_sets_build_what_they_name():
    assert _params(LATENCY_US.new()) == LATENCY_US == HdrParams(1, 3_600_000_000, 3)
    assert _params(BENCHMARK_US.new()) == BENCHMARK_US == HdrParams(1, 60_000_000, 3)
    assert LATENCY_US.new(word_size=4).word_size == 4


def test_histograms_that_leave_their_process_agree():
    """xmonitor writes SLI histograms that slo/ and benchmarks decode and merge with the exporter's and CLI's."""
    from exporter.timer import new_hdr
    from kafkascope.cli.latency import Latencies
    from xmonitor.sli_schema import decode_hdr, encode_hdr, new_histogram

    built = [new_hdr(), Latencies().histogram, new_histogram()]
    assert {_params(h) for h in built} == {LATENCY_US}
    h = new_histogram()
    h.record_value(LATENCY_US.highest)
    merged = new_hdr()
    merged.add(decode_hdr(encode_hdr(h)))
    assert merged.get_total_count() == 1 and merged.get_max_value() >= LATENCY_US.highest * 0.999


@pytest.mark.parametrize("params", [LATENCY_US, BENCHMARK_US, HdrParams(1000, 3_600_000_000, 2)])
def test_record_counts_is_record_value_in_bulk(params):
    """Every bucket edge of the range, zero, the highest value and random values land where record_value puts them;
    negative counts take them out again."""
    rnd = random.Random(7)
    edges = [v for b in range(40) for v in ((1 << b) - 1, 1 << b, (1 << b) + 1) if v <= params.highest]
    values = [0, params.highest, *edges, *(rnd.randrange(params.highest + 1) for _ in range(2000)),
              *(int(rnd.lognormvariate(7, 2)) % (params.highest + 1) for _ in range(2000))]
    items = [(v, rnd.randrange(1, 5)) for v in values]
    one_by_one, bulk = params.new(word_size=4), params.new(word_size=4)
    for v, c in items:
        one_by_one.record_value(v, c)
    record_counts(bulk, items)
    assert list(bulk.counts) == list(one_by_one.counts)
    assert (bulk.total_count, bulk.min_value, bulk.max_value) == (
        one_by_one.total_count, one_by_one.min_value, one_by_one.max_value)
    record_counts(bulk, [(v, -c) for v, c in items[:100]])
    for v, c in items[:100]:
        one_by_one.record_value(v, -c)
    assert list(bulk.counts) == list(one_by_one.counts) and bulk.total_count == one_by_one.total_count
