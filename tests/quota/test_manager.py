"""ClientQuotaManager: Kafka's quota levels, metric tags, rate window and throttle time, without a broker."""

import math

import pytest

from broker.quota.entity import DEFAULT, QuotaEntity
from broker.quota.manager import ClientQuotaManager, QuotaSettings
from broker.quota.managers import QuotaManagers
from common.clock import ManualClock


def _manager(clock=None) -> ClientQuotaManager:
    return ClientQuotaManager("Produce", QuotaSettings(), clock or ManualClock())


def test_nothing_is_recorded_until_a_quota_is_configured():
    m = _manager()
    assert not m.enabled
    assert m.record("alice", "c1", 10**9) == 0
    assert list(m.sensors()) == []
    assert m.max_value_in_window("alice", "c1") == math.inf


def test_throttle_time_brings_the_observed_rate_down_to_the_bound():
    clock = ManualClock()
    m = _manager(clock)
    m.update_quota(QuotaEntity(user="alice"), 1000.0)
    # 20,000 bytes at once: the window is taken as 10 full seconds (11 samples - 1), so 2,000 B/s observed;
    # X = (O - T) / T * W = (2000 - 1000) / 1000 * 10 s.
    assert m.record("alice", "c1", 20_000) == 10_000
    clock.advance(500)
    # The same 20,000 over 10.5 s: 1904.8 B/s, and the delay that brings it to 1,000 over that window.
    assert m.record("alice", "c1", 0) == 9_500
    (sensors,) = m.sensors()
    assert sensors.tags == ("alice", "")       # only user quotas exist: clients of alice share one rate
    assert m.record("bob", "c1", 100) == 0     # no quota for bob: measured, never throttled


def test_a_rate_under_the_bound_is_not_throttled():
    clock = ManualClock()
    m = _manager(clock)
    m.update_quota(QuotaEntity(client_id="c1"), 1000.0)
    for _ in range(30):
        assert m.record("alice", "c1", 900) == 0
        clock.advance(1000)
    (sensors,) = m.sensors()
    assert sensors.tags == ("", "c1")
    assert sensors.rate.measure(clock.monotonic()) == pytest.approx(900, rel=0.1)


def test_the_most_specific_of_the_eight_levels_applies():
    m = _manager()
    levels = {
        QuotaEntity("alice", "c1"): 1, QuotaEntity("alice", DEFAULT): 2, QuotaEntity("alice", None): 3,
        QuotaEntity(DEFAULT, "c1"): 4, QuotaEntity(DEFAULT, DEFAULT): 5, QuotaEntity(DEFAULT, None): 6,
        QuotaEntity(None, "c1"): 7, QuotaEntity(None, DEFAULT): 8,
    }
    for entity, bound in levels.items():
        m.update_quota(entity, float(bound))
    expected_tags = [("alice", "c1"), ("alice", "c2"), ("alice", ""), ("bob", "c1"), ("bob", "c2"), ("bob", ""),
                     ("", "c1"), ("", "c2")]
    clients = [("alice", "c1"), ("alice", "c2"), ("alice", "c2"), ("bob", "c1"), ("bob", "c2"), ("bob", "c2"),
               ("bob", "c1"), ("bob", "c2")]
    for i, (entity, bound) in enumerate(levels.items()):
        user, client = clients[i]
        tags = m.metric_tags(user, client)
        assert tags == expected_tags[i], entity
        assert m.quota_limit(tags) == bound, entity
        m.update_quota(entity, None)      # the next level shows once this one goes


def test_unrecord_takes_a_throttled_fetch_back():
    clock = ManualClock()
    m = ClientQuotaManager("Fetch", QuotaSettings(), clock)
    m.update_quota(QuotaEntity(None, DEFAULT), 1000.0)
    assert m.record("u", "c", 50_000) > 0
    m.unrecord("u", "c", 50_000)
    assert m.record("u", "c", 5_000) == 0
    assert m.max_value_in_window("u", "c") == 10_000     # bound * (samples - 1) * window


def test_throttles_are_counted_and_idle_sensors_expire():
    clock = ManualClock()
    seen = []
    m = ClientQuotaManager("Produce", QuotaSettings(), clock, lambda s, added: seen.append((s.tags, added)))
    m.update_quota(QuotaEntity(None, "c1"), 10.0)
    m.record("u", "c1", 1000)
    m.throttled("u", "c1", 250)
    assert m.queue_size == 1
    (sensors,) = m.sensors()
    assert sensors.throttle.avg == 250
    m.throttle_done()
    assert m.queue_size == 0
    clock.advance(3599_000)
    m.expire()
    assert list(m.sensors())
    clock.advance(1000)
    m.expire()
    assert list(m.sensors()) == []
    assert seen == [(("", "c1"), True), (("", "c1"), False)]


def test_an_entity_without_a_key_of_a_type_still_turns_that_type_on():
    """ZooKeeper mode: a user znode with only SCRAM credentials makes every client measured per user."""
    managers = QuotaManagers(QuotaSettings(), ManualClock())
    managers.apply(QuotaEntity(user="alice"), {})
    assert all(m.enabled for m in managers.all())
    managers.apply(QuotaEntity(user="bob"), {"producer_byte_rate": 1024.0, "request_percentage": 50.0})
    assert managers.produce.quota_limit(("bob", "")) == 1024.0
    assert managers.fetch.quota_limit(("bob", "")) is None
    assert managers.request.quota_limit(("bob", "")) == 50.0
    assert managers.produce.metric_tags("carol", "c9") == ("carol", "")


def test_cluster_actions_and_follower_requests_skip_the_request_quota():
    from types import SimpleNamespace as Body

    from broker.quota.throttle import skips_request_quota

    assert skips_request_quota(27, Body())                          # WriteTxnMarkers: a cluster action
    assert skips_request_quota(1, Body(replica_id=2))               # a follower's Fetch
    assert skips_request_quota(23, Body(replica_id=2))              # a follower's OffsetForLeaderEpoch
    assert not skips_request_quota(23, Body(replica_id=-1))         # a consumer's
    assert not skips_request_quota(1, Body(replica_id=-1))
    assert skips_request_quota(0, Body(acks=0)) and not skips_request_quota(0, Body(acks=-1))
