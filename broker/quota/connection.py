"""Connection creation rate quotas per client address (KIP-612): Kafka's ConnectionQuotas for IP entities.

`kafka-configs.sh --entity-type ips --entity-name 10.0.0.7 --alter --add-config connection_creation_rate=5` (or
`--entity-default`) bounds how many connections a second an address may open. An address with a quota (its own,
else the default) gets a sensor, a Rate over quota.window.num windows of quota.window.size.seconds, made on its first
connection. A connection that would take the rate over the bound is not counted and not served: it is accepted and
closed once its throttle time has passed, at most one window (SocketServer's delayed close of a
ConnectionThrottledException). Pure: the caller passes the clock and applies the close.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable

from broker.quota.entity import DEFAULT, Part
from broker.quota.manager import QuotaSettings
from common.clock import Clock
from exporter.registry import SampledMaxAvg, SampledRate

IP_SENSOR_EXPIRATION_S = 3600.0


def is_ip_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _normal(address: str) -> str:
    """An address as a connection's peer address spells it (IPv4-mapped IPv6 read as IPv4)."""
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ip)


class ListenerConnectionQuota:
    """A listener's own creation rate (`listener.name.<l>.max.connection.creation.rate`, else the broker's) and
    the average throttle its acceptor took, from the broker's or its own rate and from addresses' rates (Kafka's
    ListenerConnectionQuota sensors: socket-server-metrics listener=<l> connection-accept-rate,
    connection-accept-throttle-time, ip-connection-accept-throttle-time)."""

    def __init__(self, settings: QuotaSettings, clock: Clock) -> None:
        self.rate = SampledRate(clock, settings.window_s, settings.samples)
        self.bound: float | None = None
        self.throttle = SampledMaxAvg(clock)      # Kafka's default MetricConfig: 2 samples of 30 s
        self.ip_throttle = SampledMaxAvg(clock)


class ConnectionRateQuotas:
    """Per-address connection rate quotas and the broker's max.connection.creation.rate. `on_sensor(address, rate,
    made)` is told of address sensors made and dropped (the metrics)."""

    def __init__(self, settings: QuotaSettings, clock: Clock) -> None:
        self._settings = settings
        self._clock = clock
        self._overrides: dict[str, float] = {}
        self._default: float | None = None
        self._sensors: dict[str, SampledRate] = {}
        self._last: dict[str, float] = {}   # address -> when its sensor last recorded
        self.on_sensor: Callable[[str, SampledRate, bool], None] = lambda address, rate, made: None
        # max.connection.creation.rate: every connection accepted on a listener other than a protected
        # (inter-broker) one, always measured (broker-connection-accept-rate); None: unbounded.
        self.broker_rate = SampledRate(clock, settings.window_s, settings.samples)
        self.broker_bound: float | None = None
        self.listeners: dict[str, ListenerConnectionQuota] = {}

    def add_listeners(self, names: list[str]) -> None:
        """Every listener gets its quota at start, as ConnectionQuotas.addListener does."""
        for name in names:
            self.listeners.setdefault(name, ListenerConnectionQuota(self._settings, self._clock))

    def set_listener_bounds(self, bounds: dict[str, float | None]) -> None:
        for name, bound in bounds.items():
            if name in self.listeners:
                self.listeners[name].bound = bound

    def update(self, ip: Part, rate: float | None) -> None:
        """An IP entity's connection_creation_rate set (a number) or removed (None); DEFAULT is every address
        without its own. A sensor whose address has no quota left is dropped."""
        if ip is DEFAULT:
            self._default = rate
        elif isinstance(ip, str):
            if rate is None:
                self._overrides.pop(_normal(ip), None)
            else:
                self._overrides[_normal(ip)] = rate
        for address in [a for a in self._sensors if self.quota_of(a) is None]:
            self._drop(address)

    def _drop(self, address: str) -> None:
        self._last.pop(address, None)
        self.on_sensor(address, self._sensors.pop(address), False)

    def expire(self) -> None:
        """Drop the sensors of addresses idle for an hour (ConnectionQuotaEntity.ipQuotaEntity's expiration)."""
        now = self._clock.monotonic()
        for address in [a for a, t in self._last.items() if now - t >= IP_SENSOR_EXPIRATION_S]:
            self._drop(address)

    def on_accept(self, protected: bool, listener: str | None = None) -> int:
        """A connection accepted on `listener`: ms the acceptor waits before taking the next (0: none), as Kafka's
        waitForConnectionSlot throttles the acceptor when the broker's rate (unless the listener is protected) or
        the listener's is over its bound. The connection itself counts and is served."""
        now = self._clock.monotonic()
        ms = 0
        if not protected:
            self.broker_rate.record_at(1.0, now)
            if self.broker_bound is not None:
                ms = self._throttle_ms(self.broker_rate, self.broker_bound, now)
        quota = self.listeners.get(listener) if listener is not None else None
        if quota is not None:
            quota.rate.record_at(1.0, now)
            if quota.bound is not None:
                ms = max(ms, self._throttle_ms(quota.rate, quota.bound, now))
            if ms:
                quota.throttle.record(ms)
        return ms

    def _throttle_ms(self, rate: SampledRate, bound: float, now: float) -> int:
        """QuotaUtils.boundedThrottleTime: (O - T) / T * W, at most one quota window; 0 within the bound."""
        observed = rate.measure(now)
        if observed <= bound:
            return 0
        cap = round(self._settings.window_s * 1000)
        if bound <= 0:
            return cap
        return min(round((observed - bound) / bound * rate.window_size(now) * 1000), cap)

    def quota_of(self, address: str) -> float | None:
        return self._overrides.get(address, self._default)

    def on_connection(self, address: str, protected: bool = False, listener: str | None = None) -> int:
        """A new connection from `address`: 0 to serve it, else the throttle in ms after which it is closed
        unserved (ConnectionQuotas.recordIpConnectionMaybeThrottle; the connection is then not counted, for its
        address nor, if `on_accept` counted it, for the broker)."""
        if not self._overrides and self._default is None:
            return 0
        try:
            address = _normal(address)
        except ValueError:   # not an address (an in-process test's name): no quota applies
            return 0
        bound = self.quota_of(address)
        if bound is None:
            return 0
        rate = self._sensors.get(address)
        if rate is None:
            rate = self._sensors[address] = SampledRate(self._clock, self._settings.window_s, self._settings.samples)
            self.on_sensor(address, rate, True)
        now = self._clock.monotonic()
        self._last[address] = now
        rate.record_at(1.0, now)
        throttle = self._throttle_ms(rate, bound, now)
        if throttle:
            rate.record_at(-1.0, now)   # not served: not counted (updateListenerMetrics takes the broker's back)
            if not protected:
                self.broker_rate.record_at(-1.0, now)
            if (quota := self.listeners.get(listener) if listener is not None else None) is not None:
                quota.rate.record_at(-1.0, now)
                quota.ip_throttle.record(throttle)
        return throttle
