"""How many connections the broker keeps open (Kafka's ConnectionQuotas counts): `max.connections` in all,
`listener.name.<l>.max.connections` per listener, `max.connections.per.ip` and `max.connections.per.ip.overrides`
per client address. All of them change at run time (`kafka-configs.sh --entity-type brokers`), per broker or as
the cluster default. Pure: the server counts through `ConnectionCounts` and applies what it answers.

Kafka's rules, kept here:
- at a listener's or the broker's limit the acceptor waits for a connection to close (waitForConnectionSlot);
- the inter-broker listener, when there are others, is exempt from the broker-wide limit ("protected"), and when
  its connections take the total over the limit, the least recently active connection of another listener is
  closed (closeExcessConnections; also after the limit is lowered at run time);
- an address over its limit is refused at once (TooManyConnectionsException: the socket is closed);
- a listener's limits are its own `listener.name.<l>.` value, else the broker-wide one (valuesWithPrefixOverride).
"""

from __future__ import annotations

import ipaddress
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from broker.config import MAX_PER_IP_OVERRIDES, ConfigError, parse_overrides

INT_MAX = 2**31 - 1
MAX_CONNECTIONS = "max.connections"
MAX_PER_IP = "max.connections.per.ip"
MAX_CREATION_RATE = "max.connection.creation.rate"
LISTENER_KEYS = (MAX_CONNECTIONS, MAX_CREATION_RATE)   # SocketServer.ListenerReconfigurableConfigs


def layered(layers: Sequence[Mapping[str, str]], *keys: str) -> str | None:
    """The value of the first of `keys` any layer holds, the layers searched in order for each key (a listener's
    own key, from any layer, before the broker-wide one: Kafka's valuesWithPrefixOverride)."""
    return next((layer[key] for key in keys for layer in layers if key in layer), None)


def listener_key(listener: str, key: str) -> str:
    return f"listener.name.{listener.lower()}.{key}"


def check_per_ip(max_per_ip: int, overrides: Mapping[str, int]) -> None:
    """KafkaConfig's rule on the effective values; ValueError with its message."""
    if max_per_ip == 0 and not overrides:
        raise ValueError(f"requirement failed: {MAX_PER_IP} can be set to zero only if {MAX_PER_IP_OVERRIDES} "
                         "property is set.")


def _address(host: str) -> str:
    """An override's host as a connection's peer address spells it; `localhost` is the loopback address (a host
    name other than that cannot be resolved without blocking the event loop, and stays as written)."""
    if host.lower() == "localhost":
        return "127.0.0.1"
    try:
        return str(ipaddress.ip_address(host.strip("[]")))
    except ValueError:
        return host


@dataclass(frozen=True)
class ConnectionLimits:
    """The limits in force (INT_MAX: none)."""

    max_connections: int = INT_MAX
    per_listener: Mapping[str, int] = field(default_factory=dict)   # listener (upper case) -> its own limit
    max_per_ip: int = INT_MAX
    per_ip_overrides: Mapping[str, int] = field(default_factory=dict)   # address -> its limit

    def listener_max(self, listener: str) -> int:
        return self.per_listener.get(listener.upper(), self.max_connections)

    def ip_max(self, address: str) -> int:
        return self.per_ip_overrides.get(address, self.max_per_ip)

    @classmethod
    def of(cls, layers: Sequence[Mapping[str, str]], listeners: list[str]) -> ConnectionLimits:
        """From config layers, first wins (this broker's dynamic configs, the cluster default's, server.properties)."""
        broker_max = int(layered(layers, MAX_CONNECTIONS) or INT_MAX)
        per_listener = {name.upper(): int(v) for name in listeners
                        if (v := layered(layers, listener_key(name, MAX_CONNECTIONS))) is not None}
        overrides = {_address(h): n for h, n in parse_overrides(layered(layers, MAX_PER_IP_OVERRIDES) or "").items()}
        return cls(broker_max, per_listener, int(layered(layers, MAX_PER_IP) or INT_MAX), overrides)


def validate_limits(layers: Sequence[Mapping[str, str]], listeners: list[str]) -> None:
    """The checks on the limits an alter would put in force (config layers, first wins): KafkaConfig's on the
    per-address ones (ValueError), and each listener's (ListenerConnectionQuota.validateReconfiguration: a limit
    of 0 would shut the listener; ConfigError)."""
    limits = ConnectionLimits.of(layers, listeners)
    check_per_ip(limits.max_per_ip, limits.per_ip_overrides)
    for name in listeners:
        for key in LISTENER_KEYS:
            raw = layered(layers, listener_key(name, key), key)
            if raw is not None and int(raw) <= 0:
                raise ConfigError(f"Invalid {key} {raw}")


def listener_creation_rates(layers: Sequence[Mapping[str, str]], listeners: list[str]) -> dict[str, float | None]:
    """Each listener's connection creation rate bound: its `listener.name.<l>.max.connection.creation.rate`, else
    `max.connection.creation.rate` (None: unbounded), from the first layer that has it."""
    return {name: _bound(layered(layers, listener_key(name, MAX_CREATION_RATE), MAX_CREATION_RATE))
            for name in listeners}


def broker_creation_rate(layers: Sequence[Mapping[str, str]]) -> float | None:
    """max.connection.creation.rate (None: unbounded, Int.MaxValue being Kafka's default)."""
    return _bound(layered(layers, MAX_CREATION_RATE))


def _bound(raw: str | None) -> float | None:
    rate = int(raw) if raw is not None else INT_MAX
    return None if rate >= INT_MAX else float(rate)


class ConnectionCounts:
    """Open connections per address, per listener and in all."""

    def __init__(self, listeners: list[str], inter_broker_listener: str | None) -> None:
        self.limits = ConnectionLimits()
        self._listeners = [name.upper() for name in listeners]
        self._inter_broker = (inter_broker_listener or "").upper()
        self.total = 0
        self.per_listener: Counter[str] = Counter()
        self.per_ip: Counter[str] = Counter()

    def protected(self, listener: str) -> bool:
        """The inter-broker listener, when there are others: the broker-wide limits do not apply to it."""
        return listener.upper() == self._inter_broker and len(self._listeners) > 1

    def slot_available(self, listener: str) -> bool:
        """ConnectionQuotas.connectionSlotAvailable: under the listener's limit, and (unless protected) the
        broker's."""
        if self.per_listener[listener.upper()] >= self.limits.listener_max(listener):
            return False
        return self.protected(listener) or self.total < self.limits.max_connections

    def admits(self, address: str) -> bool:
        """Whether one more connection from `address` stays within its limit."""
        return self.per_ip[address] < self.limits.ip_max(address)

    def inc(self, listener: str, address: str) -> None:
        self.total += 1
        self.per_listener[listener.upper()] += 1
        self.per_ip[address] += 1

    def dec(self, listener: str, address: str) -> None:
        self.total -= 1
        for counter, key in ((self.per_listener, listener.upper()), (self.per_ip, address)):
            counter[key] -= 1
            if counter[key] <= 0:
                del counter[key]

    def excess(self) -> int:
        """How many connections of unprotected listeners to close (closeExcessConnections)."""
        return max(self.total - self.limits.max_connections, 0)
