"""Client quota metrics as Kafka's ClientQuotaManager registers them: per (user, client-id) sensor
``kafka.server:type=Produce|Fetch,user=..,client-id=..`` with ``byte-rate`` and ``throttle-time`` (Request:
``request-time``, a percentage of one thread; ControllerMutation: ``mutation-rate`` and ``tokens``), and
``queue-size`` per type (channels muted now). A tag the quota level leaves empty is left out of the MBean name, as
JmxReporter does; the user tag is the sanitized principal name. The replication throttles' ReplicationQuotaManagers
register ``kafka.server:type=LeaderReplication|FollowerReplication`` with ``byte-rate``, once their sensor exists; an
address with a connection creation rate quota ``kafka.server:type=socket-server-metrics,ip=..`` with
``connection-accept-rate`` (ConnectionQuotas' IP sensor), and the broker's ``broker-connection-accept-rate``."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TypedDict

from broker.config_entity import sanitize
from broker.quota.connection import ConnectionRateQuotas
from broker.quota.controller_mutation import ControllerMutationQuotaManager
from broker.quota.manager import CONTROLLER_MUTATION, REQUEST, ClientQuotaManager, ClientSensors
from broker.quota.managers import QuotaManagers
from broker.quota.replication import ReplicationQuota, ReplicationQuotas
from exporter.registry import MetricName, Registry, SampledMaxAvg, SampledRate

DOMAIN = "kafka.server"
SOCKET_SERVER = "socket-server-metrics"   # SocketServer.MetricsGroup
_Tags = TypedDict("_Tags", {"user": str, "client-id": str})


def register_quota_metrics(registry: Registry, managers: QuotaManagers,
                           connections: ConnectionRateQuotas | None = None) -> None:
    for manager in managers.all():
        registry.kafka_metric(DOMAIN, manager.quota_type, "queue-size", partial(_queue_size, manager))
        manager.set_notifier(partial(_sensor_metrics, registry, manager))
    if connections is not None:
        connections.on_sensor = partial(_connection_sensor, registry)
        # ConnectionQuotas' broker sensor, there from the start
        registry.kafka_metric(DOMAIN, SOCKET_SERVER, "broker-connection-accept-rate",
                              partial(_rate, connections.broker_rate))
        for name, quota in connections.listeners.items():   # each listener's, also from the start
            registry.kafka_metric(DOMAIN, SOCKET_SERVER, "connection-accept-rate", partial(_rate, quota.rate),
                                  listener=name)
            for prefix, avg in (("", quota.throttle), ("ip-", quota.ip_throttle)):
                registry.kafka_metric(DOMAIN, SOCKET_SERVER, f"{prefix}connection-accept-throttle-time",
                                      partial(_avg, avg), listener=name)


def _connection_sensor(registry: Registry, address: str, rate: SampledRate, added: bool) -> None:
    if added:
        registry.kafka_metric(DOMAIN, SOCKET_SERVER, "connection-accept-rate", lambda: rate.rate, ip=address)
    else:
        registry.remove(MetricName.of(DOMAIN, SOCKET_SERVER, "connection-accept-rate", ip=address))


def _rate(rate: SampledRate) -> float:
    return rate.rate


def _avg(avg: SampledMaxAvg) -> float:
    return avg.avg


def _queue_size(manager: ClientQuotaManager) -> float:
    return float(manager.queue_size)


def _attributes(manager: ClientQuotaManager, sensors: ClientSensors) -> dict[str, Callable[[], float]]:
    """The MBean attributes of one sensor pair: the rate (ControllerMutation: the rate and the bucket's tokens)
    and the average throttle."""
    out: dict[str, Callable[[], float]]
    if manager.quota_type == CONTROLLER_MUTATION:
        assert isinstance(manager, ControllerMutationQuotaManager)
        out = {"mutation-rate": lambda: sensors.rate.rate, "tokens": partial(manager.tokens, sensors)}
    else:
        out = {"request-time" if manager.quota_type == REQUEST else "byte-rate": lambda: sensors.rate.rate}
    return {**out, "throttle-time": lambda: sensors.throttle.avg}


def _sensor_metrics(registry: Registry, manager: ClientQuotaManager, sensors: ClientSensors, added: bool) -> None:
    user, client_id = sensors.tags
    tags: _Tags = {"user": sanitize(user) if user else "", "client-id": client_id}
    for attribute, read in _attributes(manager, sensors).items():
        if added:
            registry.kafka_metric(DOMAIN, manager.quota_type, attribute, read, **tags)
        else:
            registry.remove(MetricName.of(DOMAIN, manager.quota_type, attribute, **tags))


def register_replication_metrics(registry: Registry, quotas: ReplicationQuotas) -> None:
    for quota in quotas.all():
        quota.on_sensor = partial(_replication_sensor, registry)


def _replication_sensor(registry: Registry, quota: ReplicationQuota, added: bool) -> None:
    if added:
        registry.kafka_metric(DOMAIN, quota.quota_type, "byte-rate",
                              lambda: quota.rate.rate if quota.rate is not None else 0.0)
    else:
        registry.remove(MetricName.of(DOMAIN, quota.quota_type, "byte-rate"))
