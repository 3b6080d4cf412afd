from common.hdr import BENCHMARK_US, LATENCY_US, HdrParams


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
