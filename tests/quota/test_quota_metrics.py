"""Client quota MBeans under the community rule sets: Confluent's exports them, Strimzi's has no quota rule."""

from prometheus_client.parser import text_string_to_metric_families

from broker.metrics.quotas import register_quota_metrics
from broker.quota.entity import DEFAULT, QuotaEntity
from broker.quota.manager import QuotaSettings
from broker.quota.managers import QuotaManagers
from common.clock import ManualClock
from exporter.collector import build_prometheus_registry, render
from exporter.registry import MetricName, Registry


def _page(reg: Registry, rules: str) -> dict:
    text = render(build_prometheus_registry(reg, rules, process=False)).decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def test_quota_sensors_are_mbeans_named_by_their_level():
    clock = ManualClock()
    reg = Registry(clock)
    managers = QuotaManagers(QuotaSettings(), clock)
    register_quota_metrics(reg, managers)
    managers.apply(QuotaEntity("CN=app,O=x", "c1"), {"producer_byte_rate": 1000.0})
    managers.apply(QuotaEntity(None, DEFAULT), {"consumer_byte_rate": 1000.0})
    assert managers.produce.record("CN=app,O=x", "c1", 20_000) == 10_000
    managers.produce.throttled("CN=app,O=x", "c1", 10_000)
    managers.fetch.record("bob", "c2", 5_000)
    names = {n.mbean for n, _ in reg.items() if n.type in ("Produce", "Fetch", "Request")}
    # The user tag is the sanitized principal name; a tag the level leaves empty is not in the name (JmxReporter).
    assert {"kafka.server:type=Produce,name=byte-rate,user=CN%3Dapp%2CO%3Dx,client-id=c1",
            "kafka.server:type=Fetch,name=byte-rate,client-id=c2",
            "kafka.server:type=Produce,name=queue-size"} <= names
    confluent = _page(reg, "confluent")
    user = ("user", "CN%3Dapp%2CO%3Dx")
    assert confluent[("kafka_server_produce_byte_rate", (("client_id", "c1"), user))] == 2000.0
    assert confluent[("kafka_server_produce_throttle_time", (("client_id", "c1"), user))] == 10_000.0
    assert confluent[("kafka_server_fetch_byte_rate", (("client_id", "c2"),))] == 500.0
    assert not any(name.startswith(("kafka_server_produce", "kafka_server_fetch_"))
                   for name, _ in _page(reg, "strimzi"))
    clock.advance(3600_000)
    for m in managers.all():
        m.expire()
    assert MetricName.of("kafka.server", "Fetch", "byte-rate", **{"client-id": "c2"}) not in dict(reg.items())
