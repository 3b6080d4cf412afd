"""Kafka's Java consumer (ConsoleConsumer from the Apache Kafka 3.9.2 jars) through an incremental fetch session
(KIP-227), on our broker and on Apache Kafka 3.9 (the same expectations hold for both): it opens one session of
its partitions, fetches incrementally while records arrive on some partitions only, prints exactly what was
produced, and closes the session when it exits (the Java client sends a last Fetch with epoch -1 on close).
The backends are shared with other interop tests, so the FetchSessionCache gauges are compared with their
values before the consumer started."""

from __future__ import annotations

import re
import subprocess
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.helpers import create_topic, wait_until
from tests.interop.conftest import apache_kafka_or_skip
from tests.scenarios.fetch_sessions import CACHED, PARTITIONS, SESSIONS, Produced

CONSOLE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer"
LINE = re.compile(r"Partition:(\d+)\tOffset:(\d+)\t(.*)")


def fetch_cache(url: str) -> tuple[float, float]:
    """(NumIncrementalFetchSessions, NumIncrementalFetchPartitionsCached) scraped from a /metrics URL."""
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    m = {s.name: s.value for fam in text_string_to_metric_families(text) for s in fam.samples if not s.labels}
    return m.get(SESSIONS, -1.0), m.get(CACHED, -1.0)


def test_java_console_consumer_reads_through_one_session(backend, topic_name, tmp_path):
    apache_kafka_or_skip()
    from kafkascope.local.apache_kafka import tool_command

    b = backend
    url = b.metrics_url
    sessions0, cached0 = fetch_cache(url)
    assert sessions0 >= 0 and cached0 >= 0, "no FetchSessionCache gauges"
    create_topic(b.port, topic_name, partitions=PARTITIONS)
    produced = Produced(b.bootstrap, topic_name)
    produced.send(dict.fromkeys(range(PARTITIONS), 30))
    total = 30 * PARTITIONS + 20 + 40
    out_path = tmp_path / "console-consumer.out"
    with open(out_path, "w") as out, open(tmp_path / "console-consumer.err", "w") as err:
        proc = subprocess.Popen(tool_command(
            CONSOLE_CONSUMER, "--bootstrap-server", b.bootstrap, "--topic", topic_name, "--from-beginning",
            "--max-messages", str(total), "--timeout-ms", "60000", "--consumer-property", "fetch.max.wait.ms=200",
            "--property", "print.partition=true", "--property", "print.offset=true"), stdout=out, stderr=err)
        try:
            wait_until(lambda: proc.poll() is not None or fetch_cache(url) == (sessions0 + 1, cached0 + PARTITIONS), 90,
                       what="the Java consumer's fetch session of every partition")
            assert proc.poll() is None, (tmp_path / "console-consumer.err").read_text()
            produced.send({0: 10, 3: 10})                           # news on two partitions only
            produced.send({1: 10, 2: 10, 4: 10, 5: 10})
            assert proc.wait(timeout=90) == 0, (tmp_path / "console-consumer.err").read_text()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    got: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(PARTITIONS)}
    for line in out_path.read_text().splitlines():
        m = LINE.fullmatch(line)
        assert m, line
        got[int(m.group(1))].append((int(m.group(2)), m.group(3).encode()))
    assert got == {p: list(enumerate(v)) for p, v in produced.values.items()}
    # the consumer closed its session on exit
    wait_until(lambda: fetch_cache(url) == (sessions0, cached0), 15, what="the session closed by the consumer")
