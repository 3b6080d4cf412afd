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


def test_a_stall_counts_against_every_probe_due_during_it():
    """A server that stalls 100 ms once: the probes due meanwhile wait too, and each says so (timed from when it
    was due, not from when the stalled probe let it go)."""
    import socket
    import threading
    import time

    from benchmarks.scrape_pause import probe

    srv = socket.create_server(("127.0.0.1", 0))
    port = srv.getsockname()[1]

    def serve() -> None:
        conn, _ = srv.accept()
        with conn:
            for n in range(100):
                head = conn.recv(4, socket.MSG_WAITALL)
                if len(head) < 4:
                    return
                frame = conn.recv(struct.unpack(">i", head)[0], socket.MSG_WAITALL)
                if n == 20:
                    time.sleep(0.1)   # the stall
                conn.sendall(struct.pack(">i", 4) + frame[4:8])   # the correlation id back

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        lat = probe("127.0.0.1", port, 0.5, 0.005)   # 100 probes due 5 ms apart
    finally:
        t.join(5)
        srv.close()
    assert len(lat) == 100 and max(lat) >= 100
    assert sum(1 for x in lat if x >= 50) >= 8   # ~10 probes were due within the stall's first half
