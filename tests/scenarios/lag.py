"""The lag monitor live against a broker (ours or Apache Kafka): a running monitor, a group committing chosen
offsets, and the OK / STOP / STALL / REWIND and HTTP-API-vs-/metrics scenarios on them."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from confluent_kafka import Consumer, Producer, TopicPartition

from common.polling import wait_until
from lagmonitor.api import LagAPI, serve
from lagmonitor.collector import Collector, wall_ms
from lagmonitor.config import CollectorConfig, LagConfig
from lagmonitor.evaluator import EvaluatorConfig
from lagmonitor.monitor import LagMonitor
from lagmonitor.rules import Status
from lagmonitor.storage import StorageConfig

CONFIG = LagConfig(storage=StorageConfig(intervals=3), evaluator=EvaluatorConfig(expire_cache_s=0),
                   collector=CollectorConfig(offset_refresh_s=0.3, topic_refresh_s=0.5), snapshot_interval_s=3600)


class Running:
    """A monitor with its collector thread (and optionally the HTTP API) against a broker."""

    def __init__(self, bootstrap: str, config: LagConfig, client_props: dict[str, str] | None = None) -> None:
        self.monitor = LagMonitor(config)
        self.client_props = dict(client_props or {})   # security settings for every client (--command-config)
        self.collector = Collector(bootstrap, self.monitor, client_props=self.client_props)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.collector.run, args=(self.stop,), daemon=True)
        self.thread.start()

    def status(self, group: str):
        with self.monitor.lock:
            return self.monitor.evaluator.group(group, wall_ms())

    def close(self) -> None:
        self.stop.set()
        self.thread.join(30)


class Scenario:
    """A topic with messages, and a group that commits chosen offsets."""

    def __init__(self, bootstrap: str, running: Running, messages: int) -> None:
        self.bootstrap, self.running = bootstrap, running
        self.topic = f"lag-{uuid.uuid4().hex[:8]}"
        self.group = f"g-{self.topic}"
        self.end = 0
        self.consumer = Consumer({**running.client_props, "bootstrap.servers": bootstrap, "group.id": self.group,
                                  "enable.auto.commit": False})
        self.produce(messages)
        # the topic must be known to the log-end poller before commits are stored (Burrow drops earlier ones)
        wait_until(lambda: self._primed(), 30.0, what=f"log-end offsets of {self.topic}")

    def _primed(self) -> bool:
        with self.running.monitor.lock:
            known = self.running.monitor.storage.topic_offsets(self.topic) == [self.end]
        if not known:
            self.commit(0, group_consumer=Consumer({**self.running.client_props, "bootstrap.servers": self.bootstrap,
                                                    "group.id": f"prime-{self.topic}"}))
        return known

    def produce(self, n: int) -> None:
        p = Producer({**self.running.client_props, "bootstrap.servers": self.bootstrap})
        for i in range(n):
            p.produce(self.topic, value=b"m%d" % i)
        p.flush(10)
        self.end += n

    def commit(self, offset: int, group_consumer: Consumer | None = None) -> None:
        c = group_consumer or self.consumer
        c.commit(offsets=[TopicPartition(self.topic, 0, offset)], asynchronous=False)
        if group_consumer is not None:
            group_consumer.close()

    def wait_status(self, status: Status, partition_status: Status, timeout_s: float = 30.0):
        def check():
            g = self.running.status(self.group)
            return g if g.status is status and g.partitions[0].status is partition_status else None
        return wait_until(check, timeout_s, what=f"{self.group} {status.name}/{partition_status.name}; last "
                                                 f"{self.running.status(self.group)}")

    def newest_order(self) -> int:
        with self.running.monitor.lock:
            g = self.running.monitor.storage.groups.get(self.group)
            ring = g.topics[self.topic][0].ring if g and self.topic in g.topics else None
            return ring[-1].order if ring else -1

    def commit_stored(self, offset: int) -> None:
        """Commit and wait until the monitor has stored it."""
        before = self.newest_order()
        self.commit(offset)
        wait_until(lambda: self.newest_order() > before, 30.0, what=f"commit {offset} of {self.group} stored")

    def close(self) -> None:
        self.consumer.close()


MakeScenario = Callable[..., Scenario]


@contextmanager
def scenarios(bootstrap: str, running: Running) -> Iterator[MakeScenario]:
    """A factory of Scenarios on `bootstrap` watched by `running`; closes their consumers at the end."""
    made: list[Scenario] = []

    def make(messages: int = 100) -> Scenario:
        made.append(Scenario(bootstrap, running, messages))
        return made[-1]
    try:
        yield make
    finally:
        for s in made:
            s.close()


def commit_series(s: Scenario, offsets, produce_between: int = 0) -> None:
    for off in offsets:
        if produce_between:
            s.produce(produce_between)
            wait_until(lambda: s.running.monitor.storage.topic_offsets(s.topic) == [s.end], 30.0, what="log end seen")
        s.commit_stored(off)
        time.sleep(0.2)   # commit timestamps must differ for the window to span time


def keeps_up_is_ok(scenario: MakeScenario) -> None:
    """A group committing the log end as it grows is OK."""
    s = scenario(10)
    for _ in range(4):
        s.commit_stored(s.end)
        s.produce(5)
        wait_until(lambda: s.running.monitor.storage.topic_offsets(s.topic) == [s.end], 30.0, what="log end seen")
    s.commit_stored(s.end)
    g = s.wait_status(Status.OK, Status.OK)
    assert g.totallag == 0 and g.partitions[0].complete == 1.0


def stops_committing_with_lag_is_stop(scenario: MakeScenario) -> None:
    """Commits that stop short of the log end: STOP."""
    s = scenario(100)
    commit_series(s, [10, 20, 30])
    g = s.wait_status(Status.ERR, Status.STOP)
    assert g.totallag == 70 and g.partitions[0].end.offset == 30


def same_offset_while_lag_grows_is_stall(scenario: MakeScenario) -> None:
    """The same offset committed while the lag grows: STALL."""
    s = scenario(100)
    commit_series(s, [10, 10, 10, 10], produce_between=10)
    g = s.wait_status(Status.ERR, Status.STALL, timeout_s=5)
    assert g.partitions[0].current_lag == s.end - 10


def reset_to_earlier_offset_is_rewind(scenario: MakeScenario) -> None:
    """A commit below the previous one: REWIND."""
    s = scenario(100)
    commit_series(s, [50, 60, 70])
    s.commit_stored(20)
    with s.running.monitor.lock:
        assert [e.offset for e in s.running.monitor.storage.groups[s.group].topics[s.topic][0].ring] == [60, 70, 20]
    s.wait_status(Status.ERR, Status.REWIND, timeout_s=5)


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def metric(text: str, name: str, **labels) -> float:
    want = ",".join(f'{k}="{v}"' for k, v in labels.items())
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"no {name}{{{want}}} in /metrics")


def http_api_and_metrics_agree(scenario: MakeScenario, running: Running) -> None:
    """The Burrow HTTP API and /metrics report the same STOP group; DELETE removes it from both."""
    s = scenario(100)
    commit_series(s, [10, 20, 30])
    s.wait_status(Status.ERR, Status.STOP)
    server = serve(LagAPI(running.monitor, wall_ms), 0)
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        code, body = get(f"{base}/v3/kafka")
        assert code == 200 and json.loads(body)["clusters"] == ["local"]
        code, body = get(f"{base}/v3/kafka/local/consumer")
        assert s.group in json.loads(body)["consumers"]
        code, body = get(f"{base}/v3/kafka/local/consumer/{s.group}/lag")
        lag = json.loads(body)
        assert code == 200 and lag["error"] is False and lag["message"] == "consumer status returned"
        st = lag["status"]
        assert set(st) >= {"cluster", "group", "status", "complete", "partitions", "partition_count", "maxlag",
                           "totallag"}
        [p] = st["partitions"]
        assert set(p) >= {"topic", "partition", "owner", "client_id", "status", "start", "end", "current_lag",
                          "complete"}
        assert set(p["end"]) == {"offset", "timestamp", "observedAt", "lag"}
        assert (st["status"], p["status"], st["totallag"], p["current_lag"]) == ("ERR", "STOP", 70, 70)
        assert p["lag_seconds"] > 0
        code, body = get(f"{base}/v3/kafka/local/consumer/{s.group}")
        detail = json.loads(body)["topics"][s.topic][0]
        assert detail["current-lag"] == 70 and [o["offset"] for o in detail["offsets"]] == [10, 20, 30]
        code, body = get(f"{base}/v3/kafka/local/topic/{s.topic}")
        assert json.loads(body)["offsets"] == [100]
        code, body = get(f"{base}/v3/kafka/local/topic/{s.topic}/consumers")
        assert s.group in json.loads(body)["consumers"]

        code, text = get(f"{base}/metrics")
        text = text.decode()
        labels = {"cluster": "local", "consumer_group": s.group}
        assert metric(text, "burrow_kafka_consumer_status", **labels) == Status[st["status"]].value
        assert metric(text, "burrow_kafka_consumer_lag_total", **labels) == st["totallag"]
        pl = {**labels, "topic": s.topic, "partition": 0}
        assert metric(text, "burrow_kafka_consumer_partition_lag", **pl) == p["current_lag"]
        assert metric(text, "burrow_kafka_consumer_current_offset", **pl) == p["end"]["offset"]
        assert metric(text, "burrow_kafka_topic_partition_status", **pl) == Status.STOP.value
        assert metric(text, "kafka_consumergroup_lag", consumergroup=s.group, topic=s.topic, partition=0) == 70
        assert metric(text, "kafka_consumergroup_lag_sum", consumergroup=s.group, topic=s.topic) == 70
        assert metric(text, "kafka_consumergroup_members", consumergroup=s.group) == 0   # commits without joining
        assert metric(text, "burrow_kafka_topic_partition_offset", cluster="local", topic=s.topic, partition=0) == 100

        req = urllib.request.Request(f"{base}/v3/kafka/local/consumer/{s.group}", method="DELETE")
        with urllib.request.urlopen(req, timeout=10) as r:
            assert json.loads(r.read())["message"] == "consumer group removed"
        code, body = get(f"{base}/v3/kafka/local/consumer/{s.group}/status")
        assert code == 404 and json.loads(body)["status"]["status"] == "NOTFOUND"
        assert f'consumer_group="{s.group}"' not in get(f"{base}/metrics")[1].decode()
        assert get(f"{base}/nope")[0] == 404
    finally:
        server.shutdown()
