"""The default of every broker config this broker reads, as `kafka-configs.sh --describe --all --entity-type
brokers` lists it: the value, or None where Kafka's default is null (`log.retention.ms=null`). They are Kafka
3.9's defaults (tests/broker/test_config_defaults.py compares them with a real broker's listing) except where
this broker's own default differs on purpose, shown as it is: it listens on 127.0.0.1 and keeps its logs in
/tmp/kafkascope-logs by default, its broker id is 0, and the KIP-848 keys take Kafka 4's defaults.
"""

from __future__ import annotations

import dataclasses
from functools import cache

from broker.config import _BROKER_KEYS, TOPIC_CONFIGS, BrokerConfig, default_synonym
from broker.network.listener_tls import RECONFIGURABLE as SSL_KEYS

# Keys Kafka leaves null (or reads through another key); this broker's empty string means the same.
_NULL = frozenset({"advertised.listeners", "broker.rack", "zookeeper.connect", "log.dirs", "log.retention.ms",
                   "log.retention.minutes", "log.roll.ms"})
# Keys this broker reads that Kafka does not describe (the authorizer's, the cluster's id, an internal interval):
# listed only when set.
_NOT_KAFKA_CONFIG = frozenset({"allow.everyone.if.no.acl.found", "super.users", "cluster.id",
                               "producer.id.expiration.check.interval.ms"})
# Kafka's defaults of keys read by other parts of this broker than BrokerConfig.
_OTHERS: dict[str, str | None] = {
    **{key: None for key in SSL_KEYS}, "ssl.keystore.type": "JKS", "ssl.truststore.type": "JKS"}


def _shown(value: object) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    return None if value is None else str(value)


@cache
def broker_defaults() -> dict[str, str | None]:
    """Broker config key -> its default as described (None: null)."""
    base = BrokerConfig()
    fields = {f.name for f in dataclasses.fields(BrokerConfig)}
    out: dict[str, str | None] = dict(_OTHERS)
    for key, (attr, _parse) in _BROKER_KEYS.items():
        if key in _NOT_KAFKA_CONFIG or attr not in fields:
            continue
        out[key] = _shown(getattr(base, attr))
    for spec in TOPIC_CONFIGS.values():   # the log config defaults: log.retention.hours=168, ...
        if spec.broker_key:
            name, value = default_synonym(spec)
            out.setdefault(name, value)
            out.setdefault(spec.broker_key, spec.default)
    for key in _NULL:   # last: Kafka's null wins over this broker's empty string or built-in value
        out[key] = None
    return out
