"""Transactional probe mode (`produce.transactional.enabled`, ours; docs/xmonitor.md §5): every round sends one
probe record per partition inside one transaction (KIP-98) and commits it; the consumer reads read_committed.

Two SLIs come out of it, as Prometheus histograms on the probe's registry:
- commit latency: the duration of `commit_transaction()` (EndTxn to the coordinator, which writes the markers);
- visibility delay: from the moment `commit_transaction()` is called to the moment the read_committed consumer
  receives a record of the round, i.e. how long a committed write takes to become readable. It is measured from
  the call, not from its return, so it never depends on which of the producer's reply and the consumer's fetch
  comes first.

A round whose commit fails is aborted: its records never become visible, so each partition's sequence index goes
back to the round's, and the next round sends those indexes again (no false loss in the consume accounting).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from confluent_kafka import KafkaError, KafkaException, Producer
from prometheus_client import Counter, Histogram

from common.clock import SYSTEM, Clock
from xmonitor.config import MonitorConfig
from xmonitor.metrics import Recorder
from xmonitor.services.base import error_name, log
from xmonitor.services.produce import ProduceService, producer_config

BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0)


class Rounds:
    """Which round each (partition, index) went out in and when that round's commit was called; bounded (the
    oldest entries go first: a record never consumed must not keep its entry for ever)."""

    def __init__(self, cap: int = 100_000) -> None:
        self.cap = cap
        self._lock = threading.Lock()
        self._round_of: OrderedDict[tuple[int, int], int] = OrderedDict()
        self._commit_called_us: dict[int, int] = {}

    def sent(self, round_id: int, partition: int, index: int) -> None:
        with self._lock:
            self._round_of[(partition, index)] = round_id
            while len(self._round_of) > self.cap:
                _, old = self._round_of.popitem(last=False)
                if old not in self._round_of.values():
                    self._commit_called_us.pop(old, None)

    def commit_called(self, round_id: int, wall_us: int) -> None:
        with self._lock:
            self._commit_called_us[round_id] = wall_us

    def visibility_us(self, partition: int, index: int, consumed_us: int) -> int | None:
        """Commit call → consumed, once per (partition, index); None for a record of no committed round."""
        with self._lock:
            round_id = self._round_of.pop((partition, index), None)
            called = self._commit_called_us.get(round_id) if round_id is not None else None
            return None if called is None else max(0, consumed_us - called)


class TxnMetrics:
    def __init__(self, rec: Recorder) -> None:
        labels = ("cluster", "topic")
        self.values = (rec.cfg.cluster_name, rec.cfg.topic)
        self.h_commit = Histogram("xmonitor_txn_commit_latency_seconds", "commit_transaction() duration of a probe "
                                  "round", labels, buckets=BUCKETS, registry=rec.registry)
        self.h_visible = Histogram("xmonitor_txn_visibility_delay_seconds", "commit_transaction() called to the "
                                   "record read by the read_committed consumer", labels, buckets=BUCKETS,
                                   registry=rec.registry)
        self.c_rounds = Counter("xmonitor_txn_rounds", "probe transactions by outcome (committed, aborted)",
                                (*labels, "outcome", "error"), registry=rec.registry)

    def committed(self, latency_s: float) -> None:
        self.h_commit.labels(*self.values).observe(latency_s)
        self.c_rounds.labels(*self.values, "committed", "").inc()

    def aborted(self, error: str) -> None:
        self.c_rounds.labels(*self.values, "aborted", error).inc()

    def visible(self, delay_s: float) -> None:
        self.h_visible.labels(*self.values).observe(delay_s)


def transactional_id(cfg: MonitorConfig) -> str:
    """Stable across restarts, so a restarted probe fences its predecessor (KIP-98 zombie fencing)."""
    return f"{cfg.produce_producer_id}-{cfg.cluster_name}-{cfg.topic}"


class TransactionalProduceService(ProduceService):
    """The produce service with one transaction per round; rounds every produce.record.delay.ms (not spread)."""

    name = "produce"

    def __init__(self, cfg: MonitorConfig, rec: Recorder, run_id: str, clock: Clock = SYSTEM) -> None:
        super().__init__(cfg, rec, run_id, clock)
        self.producer = self._new_producer()   # in place of the base class's idempotent one
        self.rounds = Rounds()
        self.txn = TxnMetrics(rec)
        self._round = 0
        self._initialised = False

    def _new_producer(self) -> Producer:
        return Producer({**producer_config(self.cfg), "transactional.id": transactional_id(self.cfg),
                         "transaction.timeout.ms": max(self.cfg.produce_request_timeout_ms * 3, 60000)})

    def on_consumed(self, partition: int, index: int, consumed_us: int) -> None:
        """The consume service's hook: one record read back read_committed."""
        delay = self.rounds.visibility_us(partition, index, consumed_us)
        if delay is not None:
            self.txn.visible(delay / 1e6)

    def _ensure_initialised(self) -> bool:
        if self._initialised:
            return True
        try:
            self.producer.init_transactions(self.cfg.produce_request_timeout_ms / 1000.0)
            self._initialised = True
        except KafkaException as e:
            log.warning("produce: init_transactions failed: %s", error_name(e))
        return self._initialised

    def run_round(self) -> None:
        parts = list(self.partitions)
        if not parts or not self._ensure_initialised():
            return
        self._round += 1
        rid, sent = self._round, {p: self.index.get(p, 0) for p in parts}
        timeout_s = self.cfg.produce_request_timeout_ms / 1000.0
        try:
            self.producer.begin_transaction()
            for p in parts:
                self.rounds.sent(rid, p, sent[p])
                self.send(p)
            # every delivery report of the round is served here, before the commit, so none can move an index
            # after the round's outcome has set it
            if self.producer.flush(timeout_s):
                raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "probe records not delivered",
                                                txn_requires_abort=True))
            self.rounds.commit_called(rid, self.clock.wall_us())
            t0 = self.clock.monotonic()
            self.producer.commit_transaction(timeout_s)
            self.txn.committed(self.clock.monotonic() - t0)
            self.index.update({p: i + 1 for p, i in sent.items()})
        except KafkaException as e:
            self.index.update(sent)   # nothing of this round becomes visible: resend the same indexes
            self.txn.aborted(error_name(e))
            self._recover(e, timeout_s)

    def _recover(self, e: KafkaException, timeout_s: float) -> None:
        err = e.args[0] if e.args and isinstance(e.args[0], KafkaError) else None
        if err is not None and err.txn_requires_abort():
            try:
                self.producer.abort_transaction(timeout_s)
                return
            except KafkaException as abort_error:
                log.warning("produce: abort_transaction failed: %s", error_name(abort_error))
        elif err is not None and not err.fatal() and not err.retriable():
            return
        # fatal (fenced, or an abort that failed): a new producer re-initialises (bumping the epoch) next round
        log.warning("produce: transactional producer failed (%s); re-initialising", error_name(e))
        self.producer = self._new_producer()
        self._initialised = False
        self.in_flight.clear()

    def run(self) -> None:
        self.refresh_metadata_safely()
        self._meta_thread = threading.Thread(target=self._metadata_loop, name="xmonitor-produce-metadata",
                                             daemon=True)
        self._meta_thread.start()
        next_round = self.clock.monotonic()
        while not self.stopping:   # bounded by stop(): wait() returns True once stopping
            delay = next_round - self.clock.monotonic()
            if delay > 0 and self.wait(delay):
                return
            now = self.clock.monotonic()
            next_round = max(next_round + self.interval, now)
            self.run_round()
            self.rec.cycle_ok(self.name)
