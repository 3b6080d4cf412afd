"""Fuzzing a live broker: mutated requests of every advertised API and version over many connections.

After the run the broker must still answer, hold every record acknowledged before it exactly once and in
order (also after kill -9 and restart), have logged no unhandled exception, and have stayed under 512 MiB.
"""

from __future__ import annotations

import asyncio
import random
import socket
import struct
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import Producer

from kafkascope.cli.fuzz import advertised_versions
from kafkascope.fuzz.mutate import campaign
from kafkascope.fuzz.runner import broker_answers, replay
from kafkascope.fuzz.seeds import FUZZ_TOPIC, seeds
from kafkascope.local.broker_process import BrokerProcess, free_port, proc_status_kb
from tests.e2e.helpers import create_topic, records

CORPUS = Path(__file__).resolve().parent / "corpus"
GUARDED_TOPIC = "acked-before-fuzzing"
PARTITIONS = 3
MAX_RSS_KB = 512 * 1024


def _produce_acknowledged(bootstrap: str, n: int) -> dict[int, list[bytes]]:
    """n records with acks=all; per partition, the values the broker acknowledged, in offset order."""
    acked: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(PARTITIONS)}
    failures: list[str] = []

    def report(err, msg) -> None:
        if err is not None:
            failures.append(str(err))
        else:
            acked[msg.partition()].append((msg.offset(), msg.value()))

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                         "compression.type": "lz4", "linger.ms": 5})
    for i in range(n):
        producer.produce(GUARDED_TOPIC, value=b"acked-%06d" % i, partition=i % PARTITIONS, on_delivery=report)
        producer.poll(0)
    assert producer.flush(30) == 0 and not failures, failures[:3]
    return {p: [v for _, v in sorted(rows)] for p, rows in acked.items()}


def _assert_exactly_the_acknowledged(port: int, acked: dict[int, list[bytes]]) -> None:
    for p, values in acked.items():
        assert [r.value for r in records(port, GUARDED_TOPIC, p)] == values, f"partition {p}"


def _invalid_request_errors(metrics_port: int) -> float:
    text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("kafka_network_requestmetrics_errors_total")
               and 'error="INVALID_REQUEST"' in line)


def _replay_corpus(port: int) -> None:
    """Each kept crash frame on its own connection: the broker closes it and keeps serving."""
    for path in sorted(CORPUS.glob("*.bin")):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(path.read_bytes())
            assert s.recv(4) == b"", f"{path.name}: answered instead of closed"
        assert asyncio.run(broker_answers("127.0.0.1", port)), f"broker gone after {path.name}"


def _fuzz_and_check(tmp_path: Path, frames: int, seed: int) -> None:
    metrics_port = free_port()
    broker = BrokerProcess(tmp_path, num_partitions=PARTITIONS, prometheus_listener=f"127.0.0.1:{metrics_port}")
    broker.start()
    try:
        acked = _produce_acknowledged(broker.bootstrap, 3000)
        # a compacted fuzz topic: Produce seeds then reach record decoding and decompression
        create_topic(broker.port, FUZZ_TOPIC, 1, cleanup_policy="compact")
        _replay_corpus(broker.port)
        versions = advertised_versions("127.0.0.1", broker.port)
        seed_list = list(seeds(versions))
        assert {k for k, _ in {(s.api_key, s.api_version) for s in seed_list}} == set(versions)
        stats = asyncio.run(replay("127.0.0.1", broker.port, campaign(seed_list, random.Random(seed), frames)))
        print(stats.summary())
        assert not stats.broker_down, f"{stats.summary()}\n{broker.log_tail()}"
        assert stats.sent == frames and stats.closed_by_broker > 0 and stats.answered > 0
        assert broker.proc is not None and broker.proc.poll() is None
        assert _invalid_request_errors(metrics_port) > 0
        hwm = proc_status_kb(broker.proc.pid, "VmHWM")
        print(f"broker peak resident memory {hwm // 1024} MiB")
        assert hwm < MAX_RSS_KB, f"peak resident memory {hwm} kB"
        _assert_exactly_the_acknowledged(broker.port, acked)
        log = broker.log_path.read_text(errors="replace")
        assert "Traceback" not in log, log[log.index("Traceback") - 300:][:3000]

        broker.kill()
        broker.start()
        _assert_exactly_the_acknowledged(broker.port, acked)
    finally:
        broker.stop()


def test_fuzzing_a_broker_keeps_it_up_and_loses_nothing(tmp_path: Path) -> None:
    _fuzz_and_check(tmp_path, frames=5000, seed=20261126)


@pytest.mark.slow
def test_fuzzing_a_broker_with_100k_frames(tmp_path: Path) -> None:
    _fuzz_and_check(tmp_path, frames=100_000, seed=14)


def test_truncated_and_oversized_frames_close_only_their_connection(shared_broker: BrokerProcess) -> None:
    cases = [struct.pack(">i", 0x7FFFFFFF) + b"\x00\x03", struct.pack(">i", -1), struct.pack(">i", 3) + b"abc",
             struct.pack(">i", 40) + b"\x00\x03\x00\x0c" + b"\xff" * 10]
    for data in cases:
        with socket.create_connection(("127.0.0.1", shared_broker.port), timeout=10) as s:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
            assert s.recv(4) == b""
    assert asyncio.run(broker_answers("127.0.0.1", shared_broker.port))
