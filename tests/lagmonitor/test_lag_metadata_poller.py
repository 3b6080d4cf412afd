"""MetadataPoller against a scripted admin client (no server): what it asks for, what it publishes and when."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from types import SimpleNamespace as NS

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import OffsetSpec

from lagmonitor.collector import MetadataPoller
from lagmonitor.config import CollectorConfig, LagConfig
from lagmonitor.monitor import LagMonitor
from tests.e2e.helpers import wait_until
from tests.lagmonitor.test_lag_topic_metrics import metadata

NOW = 1_700_000_000_000


class ScriptedAdmin:
    """list_topics answers `md` (or raises while `fail` is set); list_offsets answers `oldest` per partition (a
    partition missing from it fails) once `gate` is set."""

    def __init__(self, md, oldest: dict[tuple[str, int], int]) -> None:
        self.md, self.oldest = md, oldest
        self.gate = threading.Event()
        self.gate.set()
        self.fail = False
        self.asked: list[dict] = []
        self.metadata_calls = 0

    def list_topics(self, timeout: float):
        self.metadata_calls += 1
        if self.fail:
            raise KafkaException(KafkaError(KafkaError._TRANSPORT))
        return self.md

    def list_offsets(self, request: dict, request_timeout: float) -> dict:
        self.asked.append(request)
        assert self.gate.wait(10)
        out = {}
        for tp in request:
            out[tp] = f = Future()
            if (tp.topic, tp.partition) in self.oldest:
                f.set_result(NS(offset=self.oldest[(tp.topic, tp.partition)]))
            else:
                f.set_exception(KafkaException(KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION)))
        return out


def poller(admin: ScriptedAdmin, refresh_s: float = 10.0) -> MetadataPoller:
    m = LagMonitor(LagConfig(collector=CollectorConfig(offset_refresh_s=refresh_s)))
    return MetadataPoller("unused:0", m, lambda: NOW, admin=admin)


def test_asks_the_earliest_offset_of_every_partition_with_a_live_leader():
    admin = ScriptedAdmin(metadata(), {("t", 0): 5, ("t", 1): 0})   # t-4's answer fails
    p = poller(admin)
    p.poll()
    (request,) = admin.asked
    assert sorted((tp.topic, tp.partition) for tp in request) == [("t", 0), ("t", 1), ("t", 4)]
    assert all(isinstance(spec, OffsetSpec) and spec._value == OffsetSpec.earliest()._value
               for spec in request.values())
    assert p.monitor.cluster_meta.oldest == {("t", 0): 5, ("t", 1): 0}
    assert p.monitor.cluster_meta.taken_ms == NOW and sorted(p.monitor.cluster_meta.brokers) == [1, 2]


def test_metadata_is_published_before_the_offsets_come_back():
    admin = ScriptedAdmin(metadata(), {("t", 0): 5})
    p = poller(admin)
    p.poll()
    admin.md = NS(brokers=admin.md.brokers, topics={k: v for k, v in admin.md.topics.items() if k != "new"})
    admin.oldest = {("t", 0): 9}
    admin.gate.clear()   # the next ListOffsets hangs, as one to a paused leader does
    t = threading.Thread(target=p.poll)
    t.start()
    try:
        meta = wait_until(lambda: (m := p.monitor.cluster_meta) and "new" not in m.topics and m, 10, 0.01,
                          "the new metadata published while ListOffsets waits")
        assert meta.oldest == {("t", 0): 5}          # the previous oldest offsets meanwhile
    finally:
        admin.gate.set()
        t.join(10)
    assert p.monitor.cluster_meta.oldest == {("t", 0): 9}


def test_a_failed_metadata_poll_keeps_the_last_snapshot_and_stop_ends_the_loop():
    admin = ScriptedAdmin(metadata(), {("t", 0): 5})
    p = poller(admin, refresh_s=0.01)
    p.poll()
    before = p.monitor.cluster_meta
    admin.fail = True
    stop = threading.Event()
    t = threading.Thread(target=p.run, args=(stop,))
    t.start()
    wait_until(lambda: admin.metadata_calls >= 4, 10, 0.01, "failed polls repeated")
    stop.set()
    t.join(10)
    assert not t.is_alive()
    assert p.monitor.cluster_meta is before
