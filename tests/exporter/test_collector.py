"""The prometheus-client collector: exact names on the page, parseable by prometheus-client's own parser."""

import asyncio
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from common.clock import ManualClock
from common.steps import run_counting
from exporter.collector import build_prometheus_registry, render
from exporter.http import MetricsHTTPServer
from exporter.registry import RawFamily, RawSample, Registry


def _registry():
    clock = ManualClock()
    reg = Registry(clock)
    reg.gauge("kafka.server", "ReplicaManager", "UnderReplicatedPartitions", lambda: 0)
    reg.meter("kafka.server", "BrokerTopicMetrics", "MessagesInPerSec").mark(5)
    reg.meter("kafka.server", "BrokerTopicMetrics", "MessagesInPerSec", topic="orders").mark(5)
    t = reg.timer("kafka.network", "RequestMetrics", "TotalTimeMs", request="Produce")
    for ms in (1.0, 2.0, 3.0, 400.0):
        t.update(ms)
    reg.timer("kafka.network", "RequestMetrics", "TotalTimeMs", request="Metadata")  # never used
    reg.gauge_family("kafka.log", "Log", "Size", lambda: [((("topic", "orders"), ("partition", "0")), 123)])
    reg.kafka_metric("kafka.server", "socket-server-metrics", "connection-count", lambda: 2,
                     listener="PLAINTEXT", networkProcessor="0")
    reg.raw(lambda: [RawFamily("python_gc_pause_seconds", "summary", "gc",
                               [RawSample("_count", {"generation": "0"}, 3),
                                RawSample("_sum", {"generation": "0"}, 0.01)])])
    return reg


def _samples(text):
    out = {}
    for fam in text_string_to_metric_families(text):
        for smp in fam.samples:
            out[(smp.name, tuple(sorted(smp.labels.items())))] = smp.value
    return out


def test_strimzi_page_parses_with_exact_names():
    text = render(build_prometheus_registry(_registry(), "strimzi", process=False)).decode()
    got = _samples(text)
    assert got[("kafka_server_replicamanager_underreplicatedpartitions", ())] == 0.0
    assert got[("kafka_server_brokertopicmetrics_messagesin_total", ())] == 5.0
    assert got[("kafka_server_brokertopicmetrics_messagesin_total", (("topic", "orders"),))] == 5.0
    assert got[("kafka_network_requestmetrics_totaltimems_count_total", (("request", "Produce"),))] == 4.0
    assert got[("kafka_network_requestmetrics_totaltimems", (("quantile", "0.50"), ("request", "Produce")))] == \
        2.0
    assert got[("kafka_network_requestmetrics_totaltimems", (("quantile", "0.999"), ("request", "Produce")))] == \
        400.127
    assert got[("kafka_network_requestmetrics_totaltimems", (("quantile", "0.99"), ("request", "Metadata")))] == 0
    assert 'quantile="0.50"' in text and 'quantile="0.5"' not in text
    assert got[("kafka_log_log_size", (("partition", "0"), ("topic", "orders")))] == 123
    assert got[("kafka_server_socket_server_metrics_connection_count",
                (("listener", "PLAINTEXT"), ("networkProcessor", "0")))] == 2
    # The timer as a classic histogram, seconds, cumulative.
    assert got[("kafka_network_requestmetrics_totaltime_seconds_bucket", (("le", "0.002"), ("request", "Produce")))] \
        == 2
    assert got[("kafka_network_requestmetrics_totaltime_seconds_bucket", (("le", "+Inf"), ("request", "Produce")))] \
        == 4
    assert got[("kafka_network_requestmetrics_totaltime_seconds_sum", (("request", "Produce"),))] == 0.406
    assert not any(k[0].startswith("kafka_network_requestmetrics_totaltime_seconds") and ("request", "Metadata")
                   in k[1] for k in got)
    assert got[("python_gc_pause_seconds_count", (("generation", "0"),))] == 3


def test_confluent_page_parses():
    text = render(build_prometheus_registry(_registry(), "confluent", process=False)).decode()
    got = _samples(text)
    assert got[("kafka_server_brokertopicmetrics_messagesinpersec", (("topic", "orders"),))] == 5.0
    assert got[("kafka_network_requestmetrics_totaltimems", (("request", "Produce"),))] == 4.0
    assert ("kafka_server_brokertopicmetrics_messagesinpersec_oneminuterate_alltopics", ()) in got


def test_http_endpoint_serves_on_loopback():
    prom = build_prometheus_registry(_registry(), process=True)

    async def main():
        srv = MetricsHTTPServer(lambda: render(prom), "127.0.0.1", 0)
        port = await srv.start()
        body = await asyncio.to_thread(lambda: urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                                                      timeout=5).read())
        await srv.stop()
        return body.decode()

    text = asyncio.run(main())
    names = {f.name for f in text_string_to_metric_families(text)}
    assert "kafka_server_replicamanager_underreplicatedpartitions" in names
    assert "process_cpu_seconds" in names


def test_render_is_generate_latest_byte_for_byte():
    from prometheus_client.exposition import generate_latest

    for naming in ("strimzi", "confluent"):
        reg = _registry()
        prom = build_prometheus_registry(reg, naming, process=False)
        for _ in range(2):  # the second time from the kept outcomes and line starts
            assert render(prom) == generate_latest(prom)


def test_page_is_the_engines_page_of_the_registrys_mbeans():
    """The collector's own walk of the registry (kept outcomes, rows, common.metrics) gives what the engine gives
    for exporter.mbeans' view of it, which is what the real jmx_exporter is compared with."""
    from exporter.mbeans import mbeans
    from tests.exporter.jmx_compare import differences, ours, parse

    reg = _registry()
    timer = reg.timer("kafka.controller", "ControllerStats", "LeaderElectionRateAndTimeMs")
    timer.update(3.0)
    reg.histogram("kafka.network", "RequestMetrics", "LocalTimeMs", request="Fetch").update(1.5)
    reg.gauge("kafka.server", "KafkaServer", "BrokerState", lambda: True)
    reg.gauge_family("kafkascope.log", "LogDir", "FreeBytes", lambda: [((("logDir", "/d"),), 7)])
    for naming in ("strimzi", "confluent", "features"):
        from tests.exporter.jmx_beans import RULE_FILES

        spec = naming if naming != "features" else f"rules:{RULE_FILES['features']}"
        prom = build_prometheus_registry(reg, spec, process=False)
        for _ in range(2):
            text = render(prom).decode()
            view = [(f"{d}:{','.join(f'{k}={v}' for k, v in p)}", a, v) for d, p, a, v in mbeans(reg)]
            expected = ours([b for b in view if b[0].startswith("kafka.")], naming)
            jmx = set(parse(expected))
            page = "".join(f"{line}\n" for line in text.splitlines()
                           if not any(n in line for n in ("_seconds", "python_gc", "kafkascope_")))
            assert not differences(page, expected), naming
            assert jmx and jmx <= set(parse(page))
        assert "kafkascope_log_logdir_freebytes" in parse(text)  # our own MBean, by exporter/rules/kafkascope.yaml


def test_a_changed_rule_file_is_read_again_and_a_broken_one_keeps_the_rules(tmp_path, caplog):
    import os

    rules = tmp_path / "rules.yml"
    rules.write_text("rules:\n- pattern: kafka.server<type=ReplicaManager, name=(\\w+)><>Value\n  name: first_$1\n")
    prom = build_prometheus_registry(_registry(), f"rules:{rules}", process=False)
    assert ("first_UnderReplicatedPartitions", ()) in _samples(render(prom).decode())

    def rewrite(text: str, bump: int) -> None:
        rules.write_text(text)
        st = rules.stat()
        os.utime(rules, ns=(st.st_atime_ns, st.st_mtime_ns + bump))  # a new mtime even within the clock's tick

    rewrite("rules:\n- pattern: kafka.server<type=ReplicaManager, name=(\\w+)><>Value\n  name: second_$1\n", 10**9)
    got = _samples(render(prom).decode())
    assert ("second_UnderReplicatedPartitions", ()) in got and ("first_UnderReplicatedPartitions", ()) not in got
    rewrite("rules:\n- name: no_pattern\n", 2 * 10**9)
    assert ("second_UnderReplicatedPartitions", ()) in _samples(render(prom).decode())
    assert "reload failed" in caplog.text


def test_http_endpoint_renders_in_steps_with_the_loop_serving_between_them():
    """A broker's scrape is made in steps: other tasks run between them; a failing step is a 500."""
    turns = 0          # loop turns of another task
    seen: list[int] = []

    def steps():
        for _ in range(3):
            seen.append(turns)
            yield
        return b"m 1\n"

    def broken():
        yield
        raise RuntimeError("a gauge's bug")

    async def scrape_while_busy(srv: MetricsHTTPServer) -> tuple[int, bytes]:
        nonlocal turns
        port = await srv.start()

        def get() -> tuple[int, bytes]:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                    return r.status, r.read()
            except urllib.error.HTTPError as e:
                return e.code, e.read()

        fetch = asyncio.ensure_future(asyncio.to_thread(get))
        for _ in range(1_000_000):   # another task, one step per loop turn, until the scrape is answered
            if fetch.done():
                break
            turns += 1
            await asyncio.sleep(0)
        got = await fetch
        await srv.stop()
        return got

    unused = lambda: b"not this\n"   # noqa: E731
    assert asyncio.run(scrape_while_busy(MetricsHTTPServer(unused, render_steps=steps))) == (200, b"m 1\n")
    assert len(seen) == 3 and seen[0] < seen[1] < seen[2]
    assert asyncio.run(scrape_while_busy(MetricsHTTPServer(unused, render_steps=broken)))[0] == 500


def test_render_in_steps_is_the_render(monkeypatch):
    """The stepped page is byte for byte the page rendered whole, and yields every MATCH_STEP registry entries."""
    from exporter import collector

    monkeypatch.setattr(collector, "MATCH_STEP", 3)
    reg = _registry()
    prom = build_prometheus_registry(reg, process=False)
    whole = render(prom)
    yields, stepped = run_counting(collector.render_steps(prom))
    assert stepped == whole
    assert yields >= len(list(reg.items())) // 3


def test_a_render_runs_the_before_read_work_and_the_families_read_what_it_made():
    """Registry.before_read: a gauge family's rows made in steps before the read (a broker's per-partition
    snapshot), whole or stepped; each gauge family and each family's text is a step of its own."""
    from exporter import collector

    reg = Registry(ManualClock())
    made: dict[str, list] = {}

    def prepare():
        made["rows"] = []
        for p in range(3):
            made["rows"].append(((("topic", "t"), ("partition", str(p))), p * 10))
            yield

    reg.gauge_family("kafka.log", "Log", "LogEndOffset", lambda: made.pop("rows"))
    reg.before_read(prepare)
    prom = build_prometheus_registry(reg, process=False)
    page = render(prom).decode()
    assert 'kafka_log_log_logendoffset{partition="2",topic="t"} 20.0' in page
    yields, stepped = run_counting(collector.render_steps(prom))
    assert stepped.decode() == page
    assert yields >= 3 + 1 + len([line for line in page.splitlines() if line.startswith("# TYPE")])


async def _scrape_once(render_steps) -> bytes:
    """One GET /metrics of a MetricsHTTPServer serving `render_steps`, from a thread."""
    srv = MetricsHTTPServer(lambda: b"", render_steps=render_steps)
    port = await srv.start()

    def get() -> bytes:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            return r.read()
    try:
        return await asyncio.to_thread(get)
    finally:
        await srv.stop()


def test_http_body_is_written_in_slices_and_arrives_whole(monkeypatch):
    from exporter import http

    monkeypatch.setattr(http, "WRITE_CHUNK", 4096)
    body = b"".join(b"m_%d %d\n" % (i, i) for i in range(40_000))   # ~450 kB, ~110 slices

    def steps():
        yield
        return body

    assert asyncio.run(_scrape_once(steps)) == body


def test_a_first_read_names_a_big_family_in_steps_and_the_page_is_the_whole_render(monkeypatch):
    """The rules name a new row in ~60 µs and its line start is made once: a broker's first scrape of 10,000
    partitions did each family's 10,000 in one piece. Now NAME_STEP rows are named, TEXT_STEP line starts made,
    per step; the page is the one rendered whole."""
    from exporter import collector

    def registry() -> Registry:
        reg = Registry(ManualClock())
        reg.gauge_family("kafka.log", "Log", "Size", lambda: [((("topic", "t"), ("partition", str(p))), p)
                                                               for p in range(95)])
        return reg

    whole = render(build_prometheus_registry(registry(), process=False))
    monkeypatch.setattr(collector, "NAME_STEP", 10)
    monkeypatch.setattr(collector, "TEXT_STEP", 10)
    prom = build_prometheus_registry(registry(), process=False)
    first, page = run_counting(collector.render_steps(prom))
    again, page_again = run_counting(collector.render_steps(prom))    # named: a block, its line starts not made yet
    third, page_third = run_counting(collector.render_steps(prom))    # nothing new
    assert page == page_again == page_third == whole and page.count(b"kafka_log_log_size{") == 95
    assert first >= third + 9 + 9   # 95 rows: 9 yields naming them, 9 more writing their lines
    assert again >= third + 9       # 9 making the block's line starts


def test_steps_that_named_rows_ask_a_smaller_pause_and_the_server_takes_it(monkeypatch):
    """Naming comes once per new set of rows and at 10,000 partitions took ~5 s: its steps yield
    NAMING_PAUSE_SHARE (the server pauses that share of the step), every other step None (as long again)."""
    from exporter import collector, http

    reg = Registry(ManualClock())
    reg.gauge_family("kafka.log", "Log", "Size", lambda: [((("topic", "t"), ("partition", str(p))), p)
                                                           for p in range(30)])
    monkeypatch.setattr(collector, "NAME_STEP", 10)
    prom = build_prometheus_registry(reg, process=False)
    first, again = list(collector.render_steps(prom)), list(collector.render_steps(prom))
    assert first.count(collector.NAMING_PAUSE_SHARE) == 3 and set(first) == {None, collector.NAMING_PAUSE_SHARE}
    assert set(again) == {None}

    shares: list[float] = []
    real = http.Pauses.after_step

    def recording(self, spent: float, share: float = 1.0) -> float:
        shares.append(share)
        return real(self, spent, share)

    monkeypatch.setattr(http.Pauses, "after_step", recording)

    def steps():
        yield collector.NAMING_PAUSE_SHARE
        yield None
        return b"m 1\n"

    assert asyncio.run(_scrape_once(steps)) == b"m 1\n"
    assert shares == [collector.NAMING_PAUSE_SHARE, 1.0]
    assert http.Pauses().after_step(0.004, 0.25) == pytest.approx(0.001)


def test_a_long_render_step_is_followed_by_as_long_a_pause_for_the_loop(monkeypatch):
    """A request needs a few loop turns; with a render step in every turn it waited several steps (a 10,000-partition
    scrape put the p99 of a probe at 50-70 ms). A step of a millisecond or more is followed by as long a pause."""
    import time

    from exporter import http

    pauses: list[float] = []
    real_sleep = asyncio.sleep

    async def recording_sleep(delay: float, *args):
        pauses.append(delay)
        await real_sleep(0)

    monkeypatch.setattr(http.asyncio, "sleep", recording_sleep)

    def steps():
        time.sleep(0.004)   # a long step: busy on the loop for 4 ms at least
        yield
        yield               # a step of no work
        return b"m 1\n"

    assert asyncio.run(_scrape_once(steps)) == b"m 1\n"
    assert len(pauses) >= 2 and pauses[0] >= 0.004
    assert all(p == 0 or p >= http.PAUSE_AFTER_S for p in pauses[1:2])


def test_a_pause_that_ran_over_counts_toward_the_next():
    """The loop gets as much time as the render took, over the whole render: a pause rounded up to epoll's whole
    millisecond (or longer because the loop was busy) shortens the next, by no more than PAUSE_AFTER_S."""
    from exporter.http import PAUSE_AFTER_S, Pauses

    p = Pauses()
    assert p.after_step(0.0002) == 0.0                 # short: one loop turn, the time still owed
    p.paused(0.00005)
    assert p.after_step(0.0040) == pytest.approx(0.00415)
    p.paused(0.0050)                                   # ran 0.85 ms over
    assert p.after_step(0.0040) == pytest.approx(0.00315)
    p.paused(0.0500)                                   # the loop was busy long: credit capped
    assert p.after_step(0.0040) == pytest.approx(0.0040 - PAUSE_AFTER_S)
    p.paused(0.0040 - PAUSE_AFTER_S)
    assert p.after_step(0.0003) == 0.0


def test_the_engine_does_not_keep_again_what_the_collector_keeps():
    """A settled outcome per row is kept by the collector; the engine kept it too (13 MB at 3,000 partitions).
    The page stays the same from scrape to scrape."""
    reg = Registry(ManualClock())
    reg.gauge_family("kafka.log", "Log", "Size", lambda: [((("topic", "t"), ("partition", str(p))), p)
                                                           for p in range(95)])
    prom = build_prometheus_registry(reg, process=False)
    first, again = render(prom), render(prom)
    assert first == again and first.count(b"kafka_log_log_size{") == 95
    assert len(prom.ours.engine._plans) == 0
