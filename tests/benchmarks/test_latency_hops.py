"""benchmarks.latency_hops' reading of a /metrics page (no cluster): the Strimzi-named request quantiles of the
three request kinds, in the order a record takes them."""

from benchmarks.latency_hops import hop_rows, request_times

PAGE = """\
# TYPE kafka_network_requestmetrics_totaltimems gauge
kafka_network_requestmetrics_totaltimems{request="Produce",quantile="0.50",} 2.0
kafka_network_requestmetrics_totaltimems{request="Produce",quantile="0.99",} 19.0
kafka_network_requestmetrics_totaltimems{request="Produce",quantile="0.999",} 40.0
kafka_network_requestmetrics_totaltimems{request="Metadata",quantile="0.50",} 1.0
kafka_network_requestmetrics_totaltimems{request="FetchFollower",quantile="0.50",} 6.0
# TYPE kafka_network_requestmetrics_remotetimems gauge
kafka_network_requestmetrics_remotetimems{request="Produce",quantile="0.50",} 1.5
kafka_network_requestmetrics_remotetimems{request="FetchConsumer",quantile="0.99",} 18.0
# TYPE kafka_network_requestmetrics_localtimems gauge
kafka_network_requestmetrics_localtimems{request="Produce",quantile="0.50",} 0.1
# TYPE kafka_network_requestmetrics_requests_total counter
kafka_network_requestmetrics_requests_total{request="Produce",version="9",} 100.0
"""


def test_request_times_keeps_the_three_requests_and_two_quantiles():
    t = request_times(PAGE)
    assert t == {"Produce": {"TotalTimeMs": {"0.50": 2.0, "0.99": 19.0}, "RemoteTimeMs": {"0.50": 1.5},
                             "LocalTimeMs": {"0.50": 0.1}},
                 "FetchFollower": {"TotalTimeMs": {"0.50": 6.0}},
                 "FetchConsumer": {"RemoteTimeMs": {"0.99": 18.0}}}


def test_hop_rows_in_record_order_with_missing_figures_as_none():
    rows = dict(hop_rows(request_times(PAGE), {"p50_ms": 5.5, "p99_ms": 12.0}))
    labels = list(rows)
    assert labels[0] == "Produce TotalTimeMs p50" and labels[-2:] == ["client e2e p50", "client e2e p99"]
    assert labels.index("Produce RemoteTimeMs p99") < labels.index("FetchFollower TotalTimeMs p50") \
        < labels.index("FetchConsumer TotalTimeMs p50")
    assert rows["Produce TotalTimeMs p99"] == 19.0 and rows["FetchConsumer RemoteTimeMs p99"] == 18.0
    assert rows["FetchFollower RemoteTimeMs p50"] is None and rows["client e2e p50"] == 5.5
    assert "Produce LocalTimeMs p99" not in rows  # the parts are shown at the median only
