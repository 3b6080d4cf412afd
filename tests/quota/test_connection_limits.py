"""Connection limits (broker/quota/connection_limits.py) and a listener's creation rate (broker/quota/connection.py):
Kafka's ConnectionQuotas rules and messages, without a broker. The messages are Kafka 3.9.2's, recorded from a real
broker."""

from __future__ import annotations

import pytest

from broker.broker_configs import validate_dynamic
from broker.config import ConfigError
from broker.quota.connection import ConnectionRateQuotas
from broker.quota.connection_limits import (
    ConnectionCounts,
    ConnectionLimits,
    listener_creation_rates,
    parse_overrides,
    validate_limits,
)
from broker.quota.manager import QuotaSettings
from common.clock import ManualClock

LISTENERS = ["PLAINTEXT", "EXTERNAL"]


def test_overrides_parse_and_refuse_as_kafka():
    assert parse_overrides("127.0.0.1:2, localhost:3") == {"127.0.0.1": 2, "localhost": 3}
    assert parse_overrides("") == {}
    for text, message in (("127.0.0.1:x", 'For input string: "x"'),
                          ("bad host name!:3", "max.connections.per.ip.overrides contains invalid addresses : "
                                               "bad host name!"),
                          ("127.0.0.1", "Error parsing configuration property 'max.connections.per.ip.overrides': "
                                        "begin 0, end -1, length 9")):
        with pytest.raises(ValueError) as e:
            parse_overrides(text)
        assert str(e.value) == message


def test_a_listeners_own_key_beats_the_broker_wide_one_from_any_layer():
    own, default = {"max.connections": "100"}, {"listener.name.external.max.connections": "7"}
    static = {"max.connections.per.ip": "5", "max.connections.per.ip.overrides": "127.0.0.1:2,localhost:3,10.0.0.9:4"}
    limits = ConnectionLimits.of([own, default, static], LISTENERS)
    assert (limits.listener_max("EXTERNAL"), limits.listener_max("plaintext"), limits.max_connections) == (7, 100, 100)
    # localhost is the loopback address; the later entry for the same address wins, as in Kafka's map
    assert (limits.ip_max("127.0.0.1"), limits.ip_max("10.0.0.9"), limits.ip_max("10.0.0.1")) == (3, 4, 5)
    assert listener_creation_rates([{"max.connection.creation.rate": "50"},
                                    {"listener.name.external.max.connection.creation.rate": "10"}], LISTENERS) == \
        {"PLAINTEXT": 50.0, "EXTERNAL": 10.0}
    assert listener_creation_rates([{}], LISTENERS) == {"PLAINTEXT": None, "EXTERNAL": None}


def test_slots_protected_listener_and_excess():
    counts = ConnectionCounts(LISTENERS, inter_broker_listener="PLAINTEXT")
    # a listener without its own limit has the broker's (valuesWithPrefixOverride): PLAINTEXT gets its own here
    counts.limits = ConnectionLimits(max_connections=2, per_listener={"EXTERNAL": 1, "PLAINTEXT": 10})
    assert counts.slot_available("EXTERNAL")
    counts.inc("EXTERNAL", "10.0.0.1")
    assert not counts.slot_available("EXTERNAL")          # its own limit
    counts.inc("PLAINTEXT", "10.0.0.2")
    counts.inc("PLAINTEXT", "10.0.0.2")
    assert counts.total == 3 and counts.excess() == 1     # the protected listener went over the broker's limit
    assert counts.slot_available("PLAINTEXT")             # and still takes connections, up to its own limit
    assert ConnectionCounts(["PLAINTEXT"], "PLAINTEXT").protected("PLAINTEXT") is False   # alone: not protected
    counts.dec("EXTERNAL", "10.0.0.1")
    assert counts.excess() == 0 and not counts.slot_available("EXTERNAL")   # 2 on PLAINTEXT: the broker is full
    counts.limits = ConnectionLimits(max_per_ip=1, per_ip_overrides={"10.0.0.2": 3})
    assert counts.admits("10.0.0.2") and counts.admits("10.0.0.1")
    counts.inc("EXTERNAL", "10.0.0.1")
    assert not counts.admits("10.0.0.1")


def test_dynamic_values_are_checked_as_kafka_checks_them():
    for configs, message in (
            ({"max.connections": "-1"}, "Invalid value -1 for configuration max.connections: Value must be at least 0"),
            ({"max.connections": "abc"}, "Invalid value abc for configuration max.connections: Not a number of type INT"),
            ({"max.connections.per.ip": "-2"},
             "Invalid value -2 for configuration max.connections.per.ip: Value must be at least 0"),
            ({"listener.name.external.max.connection.creation.rate": "-1"},
             "Invalid value -1 for configuration max.connection.creation.rate: Value must be at least 0")):
        with pytest.raises(ValueError) as e:
            validate_dynamic(configs)
        assert str(e.value) == message and not isinstance(e.value, ConfigError)
    with pytest.raises(ConfigError, match="^Invalid value -1 for configuration max.connections: Value must be"):
        validate_dynamic({"listener.name.external.max.connections": "-1"})   # wrapped by the handler
    assert validate_dynamic({"listener.name.nosuch.max.connections": "3"}, per_broker=False) == \
        {"listener.name.nosuch.max.connections": "3"}   # accepted for a listener that does not exist, as Kafka
    with pytest.raises(ValueError) as e:
        validate_limits([{"max.connections.per.ip": "0"}], LISTENERS)
    assert str(e.value) == ("requirement failed: max.connections.per.ip can be set to zero only if "
                            "max.connections.per.ip.overrides property is set.")
    validate_limits([{"max.connections.per.ip": "0", "max.connections.per.ip.overrides": "10.0.0.1:5"}], LISTENERS)
    with pytest.raises(ConfigError, match="^Invalid max.connections 0$"):
        validate_limits([{"listener.name.external.max.connections": "0"}], LISTENERS)


def test_a_listener_rate_holds_its_acceptor_and_records_the_throttle():
    clock = ManualClock()
    quotas = ConnectionRateQuotas(QuotaSettings(), clock)
    quotas.add_listeners(LISTENERS)
    quotas.set_listener_bounds({"EXTERNAL": 1.0, "PLAINTEXT": None})
    external = quotas.listeners["EXTERNAL"]
    waits = [quotas.on_accept(False, "EXTERNAL") for _ in range(20)]
    assert waits[0] == 0 and max(waits) > 0 and max(waits) <= 1000   # capped at one quota window
    assert external.throttle.avg == pytest.approx(sum(w for w in waits if w) / sum(1 for w in waits if w))
    assert all(quotas.on_accept(False, "PLAINTEXT") == 0 for _ in range(20))   # the other listener: no bound
    assert quotas.broker_rate.measure(clock.monotonic()) > 0
    quotas.update("10.0.0.1", 0.1)    # an address over its rate: its throttle is recorded on the listener
    assert quotas.on_connection("10.0.0.1", False, "EXTERNAL") == 0
    assert quotas.on_connection("10.0.0.1", False, "EXTERNAL") > 0
    assert external.ip_throttle.avg > 0
