"""Produce service: one probe record per partition per `produce.record.delay.ms`, acks=all.

Sends are asynchronous and scheduled per partition, so a slow or dead partition never delays the others: each
partition has at most one send in flight (its sequence index advances only when that send is acknowledged, so a
failed send is retried with the same index and never looks like loss); a tick that finds the previous send still
in flight is skipped (no attempt), which is what makes a hung partition count as unavailable (zero throughput).
Leaders and the partition count come from a separate metadata thread, never from the send loop.

By default (`produce.spread.sends`) the partitions of each leader are offset evenly over the interval
(xmonitor/schedule.py), so the probe's records do not queue behind each other: librdkafka sends one
ProduceRequest per partition and a broker answers one request per connection at a time, so on one tick (as Xinfra schedules them; its Java producer puts them in one
request per broker) the last record would wait for all the others and the probe would measure its own burst
(e2e p99 ~6-12x `kafkascope e2e-latency`'s). The price is more wake-ups in both clients (~1.4x the CPU of one
tick, benchmarks/xmonitor_overhead.py).
"""

from __future__ import annotations

import math
import threading
from typing import Any

from confluent_kafka import KafkaException, Producer

from common.clock import SYSTEM, Clock
from xmonitor import payload
from xmonitor.config import MonitorConfig
from xmonitor.metrics import Recorder
from xmonitor.schedule import SendSchedule, send_phases
from xmonitor.services.base import Service, client_base, error_name, log


def _poll_timeout(seconds: float) -> float:
    """A poll() timeout for a wait of `seconds`, at most 100 ms, rounded up to whole milliseconds: librdkafka
    truncates to ms, so a sub-millisecond wait would return at once and the loop would spin until the send is due
    (that spin was most of the probe's CPU when sends are spread)."""
    return min(math.ceil(max(seconds, 0.0) * 1000.0) / 1000.0, 0.1)


def producer_config(cfg: MonitorConfig) -> dict[str, Any]:
    return {**client_base(cfg), "client.id": cfg.produce_producer_id, "acks": "all", "linger.ms": 0,
            "message.timeout.ms": cfg.produce_request_timeout_ms, "request.timeout.ms": cfg.produce_request_timeout_ms,
            "topic.metadata.refresh.interval.ms": cfg.metadata_refresh_interval_ms,
            **cfg.produce_producer_props}


class ProduceService(Service):
    name = "produce"

    def __init__(self, cfg: MonitorConfig, rec: Recorder, run_id: str, clock: Clock = SYSTEM) -> None:
        super().__init__(cfg, rec, clock)
        self.run_id = run_id
        self.producer = Producer(producer_config(cfg))
        self.index: dict[int, int] = {}
        self.in_flight: set[int] = set()
        self.partitions: list[int] = []
        self.phases: dict[int, float] = {}
        self._keys: dict[tuple[int, int], bytes] = {}
        self._encoder = payload.ProbeEncoder(cfg.topic, run_id, cfg.produce_producer_id, cfg.produce_record_size_byte)
        self._meta_thread: threading.Thread | None = None
        self._leaders: dict[int, int] = {}
        self.interval = cfg.produce_record_delay_ms / 1000.0

    # ---- metadata ----------------------------------------------------------------------------------------
    def refresh_metadata(self) -> None:
        md = self.producer.list_topics(self.cfg.topic, timeout=5)
        tmd = md.topics.get(self.cfg.topic)
        if tmd is None or tmd.error is not None or not tmd.partitions:
            return
        leaders = {}
        for p, pm in tmd.partitions.items():
            leaders[p] = pm.leader if pm.leader >= 0 else -1
            if pm.leader < 0 and p not in self.rec.leaders and pm.replicas:
                leaders[p] = pm.replicas[0]
        self.rec.set_topology(leaders)
        if leaders != self._leaders:
            self._leaders = leaders
            self.partitions = sorted(leaders)
            self.phases = send_phases(leaders, self.interval, self.cfg.produce_spread_sends)

    def _metadata_loop(self) -> None:
        while not self.stopping:
            try:
                self.refresh_metadata()
            except KafkaException as e:
                log.warning("produce: metadata refresh failed: %s", error_name(e))
            if self.wait(self.cfg.metadata_refresh_interval_ms / 1000.0):
                return

    # ---- sending -----------------------------------------------------------------------------------------
    def _key(self, partition: int, count: int) -> bytes:
        k = self._keys.get((partition, count))
        if k is None:
            k = self._keys[(partition, count)] = payload.key_for_partition(partition, count)
        return k

    def send(self, partition: int) -> None:
        idx = self.index.setdefault(partition, 0)
        value = self._encoder.encode(partition, idx, self.clock.wall_us())
        t0 = self.clock.monotonic()
        self.rec.record_produce_attempt(partition)

        def on_delivery(err, _msg, p=partition, t0=t0) -> None:
            self.in_flight.discard(p)
            latency = self.clock.monotonic() - t0
            if err is None:
                self.index[p] = self.index.get(p, 0) + 1
                self.rec.record_produce_result(p, None, latency)
            else:
                self.rec.record_produce_result(p, error_name(err), latency)

        try:
            self.producer.produce(self.cfg.topic, value, key=self._key(partition, max(len(self.partitions), 1)),
                                  partition=partition, on_delivery=on_delivery)
            self.in_flight.add(partition)
        except (KafkaException, BufferError) as e:
            self.rec.record_produce_result(partition, error_name(e), self.clock.monotonic() - t0)

    def run(self) -> None:
        self.refresh_metadata_safely()
        self._meta_thread = threading.Thread(target=self._metadata_loop, name="xmonitor-produce-metadata",
                                             daemon=True)
        self._meta_thread.start()
        schedule = SendSchedule(self.interval, origin=self.clock.monotonic())
        last_ok = 0.0
        wake = 0.0
        while not self.stopping:
            now = self.clock.monotonic()
            if self.phases is not schedule.phases:
                schedule.rephase(self.phases, now)
            elif now < wake:
                # woken early (a delivery report): nothing is due yet, so skip the per-partition scan
                if now - last_ok >= 1.0:
                    self.rec.cycle_ok(self.name)
                    last_ok = now
                self.producer.poll(_poll_timeout(wake - self.clock.monotonic()))
                continue
            for p in schedule.take_due(now):
                if p not in self.in_flight:
                    self.send(p)
            if now - last_ok >= 1.0:
                self.rec.cycle_ok(self.name)
                last_ok = now
            wake = schedule.wake_at(default=now + 0.05)
            self.producer.poll(_poll_timeout(wake - self.clock.monotonic()))

    def refresh_metadata_safely(self) -> None:
        try:
            self.refresh_metadata()
        except KafkaException as e:
            log.warning("produce: metadata failed: %s", error_name(e))

    def close(self) -> None:
        self.producer.flush(min(self.cfg.produce_request_timeout_ms / 1000.0, 5.0))
        if self._meta_thread is not None:
            self._meta_thread.join(6)
