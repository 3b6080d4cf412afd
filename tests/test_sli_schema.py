from xmonitor.sli_schema import SLI_SCHEMA, decode_hdr, encode_hdr, new_histogram


def test_hdr_round_trip_and_merge_is_exact():
    a, b = new_histogram(), new_histogram()
    for v in range(1, 1001):
        a.record_value(v * 10)
    b.record_value(3_000_000_000)  # 50 minutes: no cap below an hour
    merged = decode_hdr(encode_hdr(a))
    merged.add(decode_hdr(encode_hdr(b)))
    assert merged.get_total_count() == 1001
    assert abs(merged.get_value_at_percentile(50) - 5010) <= 5010 * 0.001  # rank 501 of 1001
    assert merged.get_max_value() >= 3_000_000_000 * 0.999


def test_schema_names():
    assert SLI_SCHEMA.names[:3] == ["cluster", "topic", "partition"]
    assert "e2e_latency_hdr" in SLI_SCHEMA.names
