"""producer-perf-test, consumer-perf-test, e2e-latency and demo print their reports with the right counts."""

from __future__ import annotations

import re

import pytest

from kafkascope.cli import main

NUM = r"\d+(?:\.\d+)?"


def test_producer_then_consumer_perf(cli, topic_name):
    assert cli("topics", "--create", "--topic", topic_name, "--partitions", "2")[0] == 0
    code, out, err = cli("producer-perf-test", "--topic", topic_name, "--num-records", "2000",
                         "--record-size", "100", "--throughput", "-1", "--producer-props", "acks=1")
    assert code == 0, err
    assert re.fullmatch(
        rf"2000 records sent, {NUM} records/sec \({NUM} MB/sec\), {NUM} ms avg latency, {NUM} ms max latency, "
        r"\d+ ms 50th, \d+ ms 95th, \d+ ms 99th, \d+ ms 99\.9th\.", out.splitlines()[-1])

    code, out, err = cli("consumer-perf-test", "--topic", topic_name, "--messages", "2000", "--timeout", "15000")
    assert code == 0 and err == ""
    header, values = out.splitlines()
    columns = dict(zip(header.split(", "), values.split(", "), strict=True))
    assert columns["data.consumed.in.nMsg"] == "2000"
    assert float(columns["data.consumed.in.MB"]) == pytest.approx(2000 * 100 / 2**20, abs=1e-4)
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d:\d{3}", columns["start.time"])


def test_throttled_producer_perf(cli, topic_name):
    assert cli("topics", "--create", "--topic", topic_name)[0] == 0
    code, out, _ = cli("producer-perf-test", "--topic", topic_name, "--num-records", "50",
                       "--record-size", "10", "--throughput", "100")
    rate = float(re.match(rf"50 records sent, ({NUM}) records/sec", out).group(1))
    assert code == 0 and rate <= 110


def test_consumer_perf_warns_on_timeout(cli, topic_name):
    assert cli("topics", "--create", "--topic", topic_name)[0] == 0
    code, out, err = cli("consumer-perf-test", "--topic", topic_name, "--messages", "10", "--timeout", "1000")
    assert code == 0 and err.startswith("WARNING: Exiting before consuming the expected number of messages")
    assert out.splitlines()[1].split(", ")[4] == "0"


def test_e2e_latency_percentiles(cli, topic_name):
    assert cli("topics", "--create", "--topic", topic_name)[0] == 0
    code, out, err = cli("e2e-latency", "--topic", topic_name, "--num-records", "200", "--producer-acks", "1",
                         "--record-size", "64")
    assert code == 0, err
    lines = out.splitlines()
    assert re.fullmatch(rf"0\t{NUM}", lines[0])
    assert re.fullmatch(rf"Avg latency: {NUM} ms", lines[-2])
    values = re.fullmatch(rf"Percentiles: 50th = ({NUM}) ms, 99th = ({NUM}) ms, 99\.9th = ({NUM}) ms, "
                          rf"max = ({NUM}) ms", lines[-1]).groups()
    p50, p99, p999, top = map(float, values)
    assert 0 < p50 <= p99 <= p999 <= top


def test_demo_against_running_cluster(capsys, bootstrap):
    assert main(["demo", "--bootstrap-server", bootstrap]) == 0
    out = capsys.readouterr().out
    assert "Summary: 1000 produced, 1000 consumed, lag 0" in out
    assert "CURRENT-OFFSET  LOG-END-OFFSET  LAG" in out and "PartitionCount: 3" in out
