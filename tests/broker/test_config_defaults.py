"""The defaults `kafka-configs.sh --describe --all --entity-type brokers` shows for keys nobody set
(broker/config_defaults.py) are Kafka 3.9's: compared with a real Kafka 3.9.2 broker's listing
(tests/data/kafka/broker-describe-all-3.9.2.txt, recorded with the server.properties beside it and
max.connections=100 set dynamically), key by key, except the defaults this broker keeps on purpose."""

from __future__ import annotations

import re
from pathlib import Path

from broker.config_defaults import broker_defaults

LISTING = Path(__file__).parents[1] / "data" / "kafka" / "broker-describe-all-3.9.2.txt"
# This broker's own defaults, as README says: loopback listener, its own log dir, broker id 0 (no id generation),
# Kafka 4's KIP-848 defaults; zookeeper.connection.timeout.ms is the session timeout's default, where Kafka's
# null means "the session timeout".
ON_PURPOSE = {"listeners", "log.dir", "broker.id", "node.id", "group.consumer.assignors",
              "group.coordinator.rebalance.protocols", "zookeeper.connection.timeout.ms"}
# Keys of this broker that Kafka does not have.
KAFKASCOPE_KEYS = {"prometheus.listener", "prometheus.naming", "prometheus.web.config.file", "hdr.log.dir"}


def kafka_defaults() -> dict[str, str | None]:
    """Key -> its DEFAULT_CONFIG synonym's value in Kafka's listing (None: Kafka's default is null)."""
    out: dict[str, str | None] = {}
    for line in LISTING.read_text().splitlines()[1:]:
        m = re.match(r"^  ([A-Za-z0-9.\-]+)=.* sensitive=(?:true|false) synonyms=\{(.*)\}$", line)
        assert m, line
        key, synonyms = m.groups()
        marker = f"DEFAULT_CONFIG:{key}="
        out[key] = synonyms[synonyms.index(marker) + len(marker):] if marker in synonyms else None
    return out


def test_defaults_are_kafkas():
    ours, kafka = broker_defaults(), kafka_defaults()
    assert set(ours) - set(kafka) == KAFKASCOPE_KEYS
    differ = {key: (ours[key], kafka[key]) for key in set(ours) & set(kafka) if ours[key] != kafka[key]}
    assert set(differ) == ON_PURPOSE, differ
    assert len(set(ours) & set(kafka)) > 90   # the keys this broker reads, most of Kafka's common ones


def test_producer_id_expiration_is_dynamic_and_at_least_one():
    from broker.broker_configs import validate_dynamic

    assert validate_dynamic({"producer.id.expiration.ms": "3600000"}, per_broker=False) == \
        {"producer.id.expiration.ms": "3600000"}
    for value, message in (("0", "Value must be at least 1"), ("x", "Not a number of type INT")):
        try:
            validate_dynamic({"producer.id.expiration.ms": value})
        except ValueError as e:
            assert str(e) == f"Invalid value {value} for configuration producer.id.expiration.ms: {message}"
        else:
            raise AssertionError(f"producer.id.expiration.ms={value} was taken")
