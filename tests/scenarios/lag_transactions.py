"""The lag monitor on a transactional topic, live against a broker (ours or Apache Kafka): a read_committed group
that keeps up is OK although the log end stays ahead of it (commit markers, an open transaction), which Burrow's
lag to the log end would flag; a group that stops is flagged (docs/lag-monitor.md §6)."""

from __future__ import annotations

import uuid

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from common.polling import wait_until
from lagmonitor.collector import wall_ms
from lagmonitor.evaluator import EvaluatorConfig, evaluate_views
from lagmonitor.rules import GroupStatus, Status
from tests.scenarios.lag import Running


def _read_and_commit(c: Consumer, count: int) -> None:
    """Read `count` records with read_committed, then commit the position (librdkafka's stored offset is past
    the commit marker that follows them)."""
    got = 0

    def step() -> bool:
        nonlocal got
        m = c.poll(0.2)
        if m is not None and m.error() is None:
            got += 1
        return got >= count
    wait_until(step, 30.0, interval_s=0, what=f"{count} committed records")
    c.commit(asynchronous=False)


def _committed_order(running: Running, group: str, topic: str) -> int:
    with running.monitor.lock:
        g = running.monitor.storage.groups.get(group)
        ring = g.topics[topic][0].ring if g and topic in g.topics else None
        return ring[-1].order if ring else -1


def _status(running: Running, group: str, status_lag: str) -> GroupStatus:
    """The group evaluated now with the status measured to the LSO or (Burrow's) to the log end."""
    now = wall_ms()
    with running.monitor.lock:
        views = running.monitor.storage.fetch_group(group, now)
        return evaluate_views("local", group, views, now, EvaluatorConfig(status_lag=status_lag))


def caught_up_read_committed_is_ok_and_stopped_is_flagged(bootstrap: str, running: Running) -> None:
    topic = f"txn-lag-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(15)
    wait_until(lambda: running.monitor.storage.topic_offsets(topic) == [0], 30.0, what=f"log end of {topic}")
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tid-{topic}", "linger.ms": 0})
    producer.init_transactions(30)
    groups = {name: f"{name}-{topic}" for name in ("keeps-up", "stops")}
    consumers = {name: Consumer({"bootstrap.servers": bootstrap, "group.id": g, "auto.offset.reset": "earliest",
                                 "enable.auto.commit": False, "isolation.level": "read_committed"})
                 for name, g in groups.items()}
    try:
        for c in consumers.values():
            c.subscribe([topic])
        for round_ in range(3):
            producer.begin_transaction()
            for i in range(5):
                producer.produce(topic, b"r%d-%d" % (round_, i))
            producer.commit_transaction(30)
            for name, c in consumers.items():
                if name == "keeps-up" or round_ == 0:
                    before = _committed_order(running, groups[name], topic)
                    _read_and_commit(c, 5)
                    wait_until(lambda g=groups[name], b=before: _committed_order(running, g, topic) > b, 30.0,
                               what=f"commit of {groups[name]} stored")
        # a transaction left open: the log end moves on, the LSO stays where the group is
        producer.begin_transaction()
        for i in range(3):
            producer.produce(topic, b"open-%d" % i)
        producer.flush(10)
        keeps_up, stops = groups["keeps-up"], groups["stops"]

        def contrast() -> tuple[GroupStatus, GroupStatus] | None:
            ours, burrows = _status(running, keeps_up, "lso"), _status(running, keeps_up, "high-watermark")
            return (ours, burrows) if burrows.status is Status.ERR else None
        ours, burrows = wait_until(contrast, 30.0, what=f"{keeps_up} flagged by Burrow's lag to the log end")
        p = ours.partitions[0]
        assert ours.status is Status.OK and p.status is Status.OK, ours
        # the open transaction's 3 records, and the last marker if the group committed before reading it
        assert p.lso_lag == 0 and p.current_lag in (3, 4) and p.lag_seconds == 0.0, p
        assert burrows.partitions[0].status is Status.STOP, burrows

        def flagged() -> GroupStatus | None:
            g = running.status(stops)
            return g if g.partitions and g.partitions[0].status is Status.STOP else None
        g = wait_until(flagged, 30.0, what=f"{stops} STOP")
        # two transactions of 5 and their markers, and the first marker if it committed before reading it
        assert g.status is Status.ERR and g.partitions[0].lso_lag in (12, 13), g
        assert running.status(keeps_up).status is Status.OK   # the monitor's own status agrees
        producer.abort_transaction(30)
    finally:
        for c in consumers.values():
            c.close()
