"""xmonitor's transactional mode (produce.transactional.enabled, xmonitor/txn.py): rounds committed as
transactions on our broker, read back read_committed, with commit latency and visibility delay measured; an
aborted round is sent again under the same indexes (no false loss); the round bookkeeping on its own."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from common.polling import wait_until
from kafkascope.local.broker_process import BrokerProcess
from tests.e2e.test_transactions import TXN_PROPS
from tests.xmonitor.helpers import fast_config, gauge, registry_total, scrape, total
from xmonitor import config as xconfig
from xmonitor.app import XMonitor
from xmonitor.txn import Rounds, TransactionalProduceService, transactional_id


def test_rounds_measure_from_the_commit_call_once_per_record():
    r = Rounds(cap=3)
    r.sent(1, 0, 10)
    r.sent(1, 1, 20)
    assert r.visibility_us(0, 10, 5_000) is None        # commit not called yet: no committed round
    r.sent(1, 0, 10)
    r.commit_called(1, 1_000)
    assert r.visibility_us(0, 10, 4_000) == 3_000
    assert r.visibility_us(0, 10, 9_000) is None         # counted once
    assert r.visibility_us(1, 20, 500) == 0              # a read stamped before the call (clock step): 0
    for i in range(5):                                   # bounded: the oldest entries go
        r.sent(2, 0, 100 + i)
    assert r.visibility_us(0, 100, 1) is None and len(r._round_of) == 3


def test_config_key():
    assert xconfig.from_mapping({"bootstrap.servers": "x:1", "produce.transactional.enabled": True}
                                ).produce_transactional_enabled
    assert not xconfig.from_mapping({"bootstrap.servers": "x:1"}).produce_transactional_enabled


@pytest.fixture
def txn_broker(tmp_path):
    b = BrokerProcess(tmp_path / "broker", **TXN_PROPS).start()
    yield b
    b.stop()


def test_transactional_probe_commits_reads_back_and_measures(txn_broker, tmp_path):
    cfg = fast_config(txn_broker.bootstrap, tmp_path, partitions_to_brokers_ratio=3,
                      produce_transactional_enabled=True, consume_loss_grace_ms=300)
    with XMonitor(cfg) as m:
        assert isinstance(m.produce, TransactionalProduceService)
        assert m.cfg.consume_consumer_props["isolation.level"] == "read_committed"
        wait_until(lambda: gauge(m, "consume-service", "records-consumed-total") >= 60, 30.0, what="60 consumed")
        s = scrape(m)
        assert total(s, "xmonitor_txn_rounds_total", outcome="committed") >= 20
        assert total(s, "xmonitor_txn_commit_latency_seconds_count") >= 20
        assert total(s, "xmonitor_txn_visibility_delay_seconds_count") >= 60
        # one round's commit cannot take longer than the visibility of its records, measured from the same call
        commit = total(s, "xmonitor_txn_commit_latency_seconds_sum") / total(s, "xmonitor_txn_commit_latency_seconds_count")
        assert 0 < commit < 1.0

        # an aborted round: its indexes are sent again, so the consumer sees no gap
        produce = m.produce
        before = dict(produce.index)
        real = produce.producer

        class FailingCommit:
            def __getattr__(self, name):
                return getattr(real, name)

            def commit_transaction(self, *_a):
                raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "injected", txn_requires_abort=True))
        produce.producer = FailingCommit()
        wait_until(lambda: total(scrape(m), "xmonitor_txn_rounds_total", outcome="aborted") >= 3, 10.0,
                   what="3 aborted rounds")
        assert all(produce.index[p] <= before[p] + 1 for p in before)   # at most the round in flight at the swap
        produce.producer = real
        consumed = gauge(m, "consume-service", "records-consumed-total")
        # 3 partitions every 40 ms: 90 records take 1.2 s, four times the loss grace, so a gap would be lost by now
        wait_until(lambda: gauge(m, "consume-service", "records-consumed-total") >= consumed + 90, 30.0,
                   what="consumption after the aborts")
        assert gauge(m, "consume-service", "records-lost-total") == 0
    assert registry_total(m, "xmonitor_records_lost_total") == 0
    assert registry_total(m, "xmonitor_records_duplicated_total") == 0
    assert transactional_id(m.cfg) == f"xmonitor-producer-test-{cfg.topic}"
