"""benchmarks.scrape_pause's pure parts: the probe's request is a real ApiVersions request, and the summary's
percentiles."""

import struct

from benchmarks.scrape_pause import api_versions_request, summary
from broker.protocol.codec import parse_request


def test_the_probe_sends_an_api_versions_v0_request_the_broker_parses():
    frame = api_versions_request(42)
    assert struct.unpack(">i", frame[:4])[0] == len(frame) - 4
    header, _body = parse_request(frame[4:])
    assert (header.request_api_key, header.request_api_version, header.correlation_id, header.client_id) == \
        (18, 0, 42, "probe")


def test_summary_p99_is_the_value_below_which_99_percent_fall():
    rtts = [1.0] * 990 + [50.0] * 9 + [400.0]
    assert summary(rtts) == {"count": 1000, "p50_ms": 1.0, "p99_ms": 50.0, "max_ms": 400.0}
    assert summary([3.0]) == {"count": 1, "p50_ms": 3.0, "p99_ms": 3.0, "max_ms": 3.0}
