"""KafkaHangingTransaction (dashboards/build.py `_transaction_alerts`): `promtool test rules` cases that fire and
that stay quiet, and a live scrape of our broker with a transaction open that exports the series it uses under
those names."""

from __future__ import annotations

import urllib.request
import uuid

from dashboards import build
from tests.dashboards.test_rules import B0, B1, I0, _run, case, expect, needs_promtool

M = build.M
A = "KafkaHangingTransaction"


def series(broker: str, topic: str, leo: str, lag: str) -> list[tuple[str, str]]:
    labels = f'{broker},topic="{topic}",partition="0"'
    return [(f"{M.log_end_offset}{{{labels}}}", leo), (f"{M.partition_lso_lag}{{{labels}}}", lag)]


def cases() -> list[dict]:
    return [case(A, [
        *series(B0, "hanging", "100+10x40", "1+10x40"),            # LSO still at 99 while 10 records/min arrive
        *series(B0, "committing", "100+10x40", "1 11 21 " * 13 + "1"),   # a transaction committed every 3 min
        *series(B0, "long", "100+10x40", "1+10x14 0x25"),          # one 15-min transaction, then committed
        *series(B0, "idle", "100x40", "5x40"),                      # open but nothing else written: LSO cannot move
        *series(B1, "hanging", "100+10x40", "0x40")],               # the follower: LastStableOffsetLag is 0
        [("15m", []), ("20m", []),                                  # pending: `for` is 20m
         ("25m", [expect(A, 1 + 10 * 25, **I0, topic="hanging", partition="0")])])]


def test_the_alert_is_in_its_own_group():
    groups = {g["name"]: {r["alert"] for r in g["rules"]} for g in build.alerting_rules()["groups"]}
    assert groups["kafkascope-transactions"] == {A}


@needs_promtool
def test_hanging_transaction_fires_and_stays_quiet(tmp_path):
    _run(tmp_path, A, cases())


def test_our_broker_exports_the_series_the_rule_uses(tmp_path):
    """A transaction left open with 3 records: the leader's LastStableOffsetLag is 3 and LogEndOffset is there
    under the same topic and partition labels."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    from common.polling import wait_until
    from kafkascope.local.broker_process import BrokerProcess
    from kafkascope.local.process import free_port
    from tests.e2e.test_transactions import TXN_PROPS

    metrics_port = free_port()
    topic = f"hang-{uuid.uuid4().hex[:8]}"
    with BrokerProcess(tmp_path, prometheus_listener=f"127.0.0.1:{metrics_port}", **TXN_PROPS) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(15)
        p = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": f"tid-{topic}", "linger.ms": 0})
        p.init_transactions(30)
        p.begin_transaction()
        for i in range(3):
            p.produce(topic, b"%d" % i)
        p.flush(10)

        def scraped() -> dict[str, float] | None:
            text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).read().decode()
            found = {}
            for line in text.splitlines():
                name = line.split("{", 1)[0]
                if (name in (M.partition_lso_lag, M.log_end_offset) and f'topic="{topic}"' in line
                        and 'partition="0"' in line):
                    found[name] = float(line.rsplit(" ", 1)[1])
            return found if found.get(M.partition_lso_lag) == 3 else None
        found = wait_until(scraped, 20.0, what=f"{M.partition_lso_lag} of {topic} at 3")
        assert found[M.log_end_offset] == 3
        p.abort_transaction(30)


def test_confluent_naming_exports_the_transaction_coordinator_load_times(tmp_path):
    """The community Confluent transaction-coordinator board's load-time panels (once a known gap of
    tests/interop/test_community_dashboards.py): their series are there from start, NaN until a
    `__transaction_state` partition loads, as Kafka's TransactionStateManager registers them."""
    from kafkascope.local.broker_process import BrokerProcess
    from kafkascope.local.process import free_port

    port = free_port()
    with BrokerProcess(tmp_path, prometheus_listener=f"127.0.0.1:{port}", **{"prometheus.naming": "confluent"}):
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    names = {line.split(" ", 1)[0] for line in text.splitlines() if not line.startswith("#")}
    assert {f"kafka_server_transaction_coordinator_metrics_partition_load_time_{s}" for s in ("max", "avg")} <= names
