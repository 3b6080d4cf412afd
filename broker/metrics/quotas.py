"""Client quota metrics as Kafka's ClientQuotaManager registers them: per (user, client-id) sensor
``kafka.server:type=Produce|Fetch,user=..,client-id=..`` with ``byte-rate`` and ``throttle-time`` (Request:
``request-time``, a percentage of one thread), and ``queue-size`` per type (channels muted now). A tag the quota level
leaves empty is left out of the MBean name, as JmxReporter does; the user tag is the sanitized principal name."""

from __future__ import annotations

from functools import partial
from typing import TypedDict

from broker.config_entity import sanitize
from broker.quota.manager import REQUEST, ClientQuotaManager, ClientSensors, QuotaManagers
from exporter.registry import MetricName, Registry

DOMAIN = "kafka.server"
_Tags = TypedDict("_Tags", {"user": str, "client-id": str})


def register_quota_metrics(registry: Registry, managers: QuotaManagers) -> None:
    for manager in managers.all():
        registry.kafka_metric(DOMAIN, manager.quota_type, "queue-size", partial(_queue_size, manager))
        manager.set_notifier(partial(_sensor_metrics, registry, manager.quota_type))


def _queue_size(manager: ClientQuotaManager) -> float:
    return float(manager.queue_size)


def _sensor_metrics(registry: Registry, quota_type: str, sensors: ClientSensors, added: bool) -> None:
    user, client_id = sensors.tags
    tags: _Tags = {"user": sanitize(user) if user else "", "client-id": client_id}
    rate = "request-time" if quota_type == REQUEST else "byte-rate"
    if added:
        registry.kafka_metric(DOMAIN, quota_type, rate, lambda: sensors.rate.rate, **tags)
        registry.kafka_metric(DOMAIN, quota_type, "throttle-time", lambda: sensors.throttle.avg, **tags)
    else:
        registry.remove(MetricName.of(DOMAIN, quota_type, rate, **tags))
        registry.remove(MetricName.of(DOMAIN, quota_type, "throttle-time", **tags))
