"""Incremental fetch sessions (KIP-227) over the wire: raw Fetch requests against a real broker process, the
session errors Kafka answers, and the FetchSessionCache gauges on /metrics."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from broker.fetch_session import INT32_MAX, NUM_SHARDS
from broker.log.records import Record, build_batch
from kafkascope.local.broker_process import BrokerProcess, free_port
from kafkascope.local.wire import WireClient
from tests.broker.test_metrics_e2e import PRODUCE, scrape
from tests.e2e.helpers import create_topic, wait_until

FETCH = 1
SESSIONS = "kafka_server_fetchsessioncache_numincrementalfetchsessions"
CACHED = "kafka_server_fetchsessioncache_numincrementalfetchpartitionscached"
EVICTIONS = "kafka_server_fetchsessioncache_incrementalfetchsessionevictions_total"


def _broker(tmp_path_factory, name: str, **props: object) -> BrokerProcess:
    mport = free_port()
    b = BrokerProcess(tmp_path_factory.mktemp(name), **{"prometheus.listener": f"127.0.0.1:{mport}", **props})
    b.metrics_port = mport
    return b


@pytest.fixture(scope="module")
def session_broker(tmp_path_factory):
    with _broker(tmp_path_factory, "fetch-sessions") as b:
        yield b


def fetch(w: WireClient, session_id: int, epoch: int, offsets: dict[tuple[str, int], int],
          forget: dict[str, list[int]] | None = None, version: int = 12, max_wait_ms: int = 0,
          replica_id: int = -1):
    topics: dict[str, list[dict]] = {}
    for (t, p), off in offsets.items():
        topics.setdefault(t, []).append({"partition": p, "current_leader_epoch": -1, "fetch_offset": off,
                                         "last_fetched_epoch": -1, "log_start_offset": -1,
                                         "partition_max_bytes": 1 << 20})
    return w.call(FETCH, version, {
        "cluster_id": None, "replica_id": replica_id, "max_wait": max_wait_ms, "min_bytes": 1,
        "max_bytes": 8 << 20, "isolation_level": 0, "session_id": session_id, "session_epoch": epoch,
        "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()],
        "forgotten_topics_data": [{"topic": t, "partitions": ps} for t, ps in (forget or {}).items()],
        "rack_id": ""})


def answered(resp) -> dict[tuple[str, int], object]:
    return {(t.topic, p.partition_index): p for t in resp.responses for p in t.partitions}


def batch(i: int) -> bytes:
    return build_batch([Record(timestamp=1, value=f"v{i}".encode())])


def produce_to(port: int, topic: str, partition: int, n: int = 1) -> None:
    with WireClient(port) as w:
        for i in range(n):
            resp = w.call(PRODUCE, 9, {"transactional_id": None, "acks": 1, "timeout": 5000, "topic_data": [
                {"name": topic, "partition_data": [{"index": partition, "records": batch(i)}]}]})
            assert resp.responses[0].partition_responses[0].error_code == 0


def gauge(b: BrokerProcess, name: str) -> float:
    return scrape(b.metrics_port).get((name, ()), 0.0)


def test_session_lifecycle_answers_only_what_changed(session_broker, topic_name):
    b = session_broker
    create_topic(b.port, topic_name, partitions=3)
    produce_to(b.port, topic_name, 0, 2)
    tps = [(topic_name, p) for p in range(3)]
    with WireClient(b.port) as w:
        full = fetch(w, 0, 0, dict.fromkeys(tps, 0))
        sid = full.session_id
        assert full.error_code == 0 and sid != 0
        got = answered(full)
        assert set(got) == set(tps) and got[tps[0]].high_watermark == 2 and len(got[tps[0]].records) > 0
        assert gauge(b, SESSIONS) >= 1 and gauge(b, CACHED) >= 3
        # caught up everywhere: nothing to say, after waiting max_wait
        inc = fetch(w, sid, 1, {tps[0]: 2}, max_wait_ms=50)
        assert (inc.error_code, inc.session_id, answered(inc)) == (0, sid, {})
        # one partition gets a batch: only it is answered, from the cached position
        produce_to(b.port, topic_name, 2)
        inc = fetch(w, sid, 2, {})
        assert list(answered(inc)) == [tps[2]] and answered(inc)[tps[2]].high_watermark == 1
        assert len(answered(inc)[tps[2]].records) > 0
        # the client moves on: partition 2 named at its new offset; forgetting partition 1
        produce_to(b.port, topic_name, 1)
        inc = fetch(w, sid, 3, {tps[2]: 1}, forget={topic_name: [1]})
        assert answered(inc) == {}
        # a fetch of the closed session id with epoch -1 closes it; the id is then unknown
        before = gauge(b, SESSIONS)
        closed = fetch(w, sid, -1, {tps[0]: 2})
        assert (closed.error_code, closed.session_id, set(answered(closed))) == (0, 0, {tps[0]})
        assert gauge(b, SESSIONS) == before - 1
        gone = fetch(w, sid, 4, {})
        assert (gone.error_code, gone.session_id, gone.responses) == (ErrorCode.fetch_session_id_not_found, 0, ())


def test_session_errors_name_no_partitions(session_broker, topic_name):
    b = session_broker
    create_topic(b.port, topic_name)
    tp = (topic_name, 0)
    with WireClient(b.port) as w:
        sid = fetch(w, 0, 0, {tp: 0}).session_id
        assert sid != 0
        wrong = fetch(w, sid, 5, {tp: 0})
        assert (wrong.error_code, wrong.session_id, wrong.responses) == (ErrorCode.invalid_fetch_session_epoch, 0, ())
        unknown = fetch(w, sid ^ 1, 1, {tp: 0})
        assert unknown.error_code == ErrorCode.fetch_session_id_not_found and unknown.responses == ()
        # the errors did not disturb the session: epoch 1 is still the one expected
        ok = fetch(w, sid, 1, {})
        assert (ok.error_code, ok.session_id) == (0, sid)
        # a v12 request with epoch 0 and its own id closes that session and opens another
        again = fetch(w, sid, 0, {tp: 0})
        assert again.error_code == 0 and again.session_id not in (0, sid)
        assert fetch(w, sid, 2, {}).error_code == ErrorCode.fetch_session_id_not_found


@pytest.mark.parametrize("version", [4, 6, 7, 11, 12])
def test_sessionless_fetches_open_no_session(session_broker, topic_name, version):
    b = session_broker
    create_topic(b.port, topic_name)
    produce_to(b.port, topic_name, 0)
    before = gauge(b, SESSIONS)
    with WireClient(b.port) as w:
        for _ in range(3):
            resp = fetch(w, 0, -1, {(topic_name, 0): 0}, version=version)
            assert getattr(resp, "session_id", 0) == 0
            assert len(answered(resp)[(topic_name, 0)].records) > 0
    assert gauge(b, SESSIONS) == before


def test_partition_errors_are_repeated_until_they_clear(session_broker, topic_name):
    b = session_broker
    create_topic(b.port, topic_name)
    missing = (topic_name + "-missing", 0)
    with WireClient(b.port) as w:
        full = fetch(w, 0, 0, {(topic_name, 0): 0, missing: 0})
        assert answered(full)[missing].error_code == ErrorCode.unknown_topic_or_partition
        for epoch in (1, 2):
            inc = fetch(w, full.session_id, epoch, {})
            assert list(answered(inc)) == [missing]
            assert answered(inc)[missing].error_code == ErrorCode.unknown_topic_or_partition


def test_full_cache_answers_without_a_session_and_a_follower_evicts(tmp_path_factory, topic_name):
    """8 slots: one per shard. Consumers fill them; the next consumer gets no session (young sessions are not
    evicted by consumers); a follower's session evicts a consumer's, whose next fetch is then unknown."""
    with _broker(tmp_path_factory, "fetch-sessions-full",
                 **{"max.incremental.fetch.session.cache.slots": NUM_SHARDS}) as b:
        create_topic(b.port, topic_name)
        tp = (topic_name, 0)
        with WireClient(b.port) as w:
            ids = [fetch(w, 0, 0, {tp: 0}).session_id for _ in range(NUM_SHARDS)]
            assert 0 not in ids and len(set(ids)) == NUM_SHARDS
            assert gauge(b, SESSIONS) == NUM_SHARDS
            extra = fetch(w, 0, 0, {tp: 0})
            assert extra.error_code == 0 and extra.session_id == 0 and set(answered(extra)) == {tp}
            follower = fetch(w, 0, 0, {tp: 0}, replica_id=7)
            assert follower.session_id != 0
            shard = follower.session_id // (INT32_MAX // NUM_SHARDS)
            victim = next(s for s in ids if s // (INT32_MAX // NUM_SHARDS) == shard)
            assert fetch(w, victim, 1, {}).error_code == ErrorCode.fetch_session_id_not_found
            survivor = next(s for s in ids if s != victim)
            assert fetch(w, survivor, 1, {}).error_code == 0
        wait_until(lambda: gauge(b, EVICTIONS) == 1, 10, what="one eviction counted")
        assert gauge(b, SESSIONS) == NUM_SHARDS

