"""Listeners as Kafka configures them: `listeners`, `advertised.listeners`, `listener.security.protocol.map`,
`inter.broker.listener.name`, `sasl.enabled.mechanisms`, the per-listener JAAS entries and the `ssl.*` keys.

Everything here reads `BrokerConfig.static` (the properties as given), so a broker without security keys
gets exactly one PLAINTEXT listener, as before.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field

from broker.config import BrokerConfig, ConfigError, parse_listeners
from broker.metadata import BrokerInfo
from broker.network import listener_tls
from broker.network.listener_tls import ListenerTls
from broker.network.listener_tls import listener_prop as _prop
from broker.observer import AuthenticationObserver
from broker.scram_storage import LocalScramCredentials, ScramCredentialStore
from broker.security import sasl
from broker.security.principal import SslPrincipalMapper
from common import jaas
from common.jaas import JaasEntry

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
DEFAULT_PROTOCOL_MAP = {p: p for p in PROTOCOLS}


@dataclass
class ListenerSpec:
    """One listener: where it binds, what it advertises, and how connections on it authenticate."""

    name: str
    host: str
    port: int
    protocol: str
    advertised_host: str
    advertised_port: int
    mechanisms: list[str] = field(default_factory=list)
    jaas: dict[str, JaasEntry] = field(default_factory=dict)   # mechanism -> the listener's JAAS entry
    tls_material: ListenerTls | None = None   # its key material (TLS listeners; replaced on a keystore update)

    @property
    def ssl_context(self) -> ssl.SSLContext | None:
        return self.tls_material.context if self.tls_material is not None else None

    @property
    def cert_not_after(self) -> float | None:
        """The server certificate's notAfter (epoch seconds), for expiry alerts."""
        return self.tls_material.not_after if self.tls_material is not None else None

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")


def parse_protocol_map(value: str | None) -> dict[str, str]:
    """`listener.security.protocol.map`: NAME:PROTOCOL pairs (Kafka's default maps each protocol to itself)."""
    if value is None:
        return dict(DEFAULT_PROTOCOL_MAP)
    out = {}
    for item in filter(None, (s.strip() for s in value.split(","))):
        name, sep, proto = item.partition(":")
        if not sep or proto.strip().upper() not in PROTOCOLS:
            raise ConfigError(f"Invalid value {item!r} for configuration listener.security.protocol.map")
        out[name.strip().upper()] = proto.strip().upper()
    return out


def listener_specs(config: BrokerConfig) -> list[ListenerSpec]:
    """Every configured listener, first one first (the one the broker registers as its endpoint)."""
    props = config.static
    pmap = parse_protocol_map(props.get("listener.security.protocol.map"))
    advertised = {lst.name.upper(): lst for lst in (
        parse_listeners(config.advertised_listeners, "advertised.listeners") if config.advertised_listeners else [])}
    out = []
    for lst in parse_listeners(config.listeners, "listeners"):
        name = lst.name.upper()
        protocol = pmap.get(name)
        if protocol is None:
            raise ConfigError(f"No security protocol defined for listener {lst.name}")
        adv = advertised.get(name)
        spec = ListenerSpec(lst.name, lst.host, lst.port, protocol,
                            adv.host if adv else (lst.host or "127.0.0.1"), adv.port if adv else lst.port)
        if spec.sasl:
            _configure_sasl(spec, props)
        if spec.tls:
            spec.tls_material = listener_tls.load(props, lst.name)
        out.append(spec)
    inter = props.get("inter.broker.listener.name")
    if inter and inter.upper() not in {s.name.upper() for s in out}:
        raise ConfigError(f"inter.broker.listener.name {inter} must be a listener name in listeners")
    return out


def _configure_sasl(spec: ListenerSpec, props: Mapping[str, str]) -> None:
    enabled = sasl.parse_enabled_mechanisms(_prop(props, spec.name, "sasl.enabled.mechanisms"))
    for mech in enabled:
        if mech not in sasl.MECHANISMS:
            raise ConfigError(f"SASL mechanism {mech} is not supported (supported: {', '.join(sasl.MECHANISMS)})")
        entry = jaas.server_jaas_config(props, spec.name, mech)
        if entry is None:
            raise ConfigError(f"listener {spec.name} enables {mech} but has no {jaas.listener_jaas_key(spec.name, mech)}")
        spec.jaas[mech] = entry
    spec.mechanisms = enabled


def reauth_ms(config: BrokerConfig) -> int | None:
    """`connections.max.reauth.ms` (None or 0: sessions do not expire)."""
    raw = config.static.get("connections.max.reauth.ms")
    return int(raw) if raw else None


class ServerSecurity:
    """What a server's SASL/TLS connections share: the listeners, the SCRAM credential store, the reauth limit
    and who counts authentications (`auth_observer`, socket-server-metrics)."""

    def __init__(self, config: BrokerConfig, credentials: ScramCredentialStore | None = None) -> None:
        self.listeners = listener_specs(config)
        self.reauth_ms = reauth_ms(config)
        self.credentials: ScramCredentialStore = credentials or LocalScramCredentials(config.log_dir_list[0])
        self.auth_observer: AuthenticationObserver | None = None
        self.principal_mapper = SslPrincipalMapper(config.static.get("ssl.principal.mapping.rules"))

    def spec(self, name: str) -> ListenerSpec | None:
        return next((s for s in self.listeners if s.name.upper() == name.upper()), None)


def rewrite_endpoints(result: dict, spec: ListenerSpec, first: ListenerSpec, brokers: list[BrokerInfo],
                      node_id: int) -> None:
    """Metadata, DescribeCluster and FindCoordinator answer the endpoints of the listener the client came in on
    (Kafka: the brokers' endpoints for the same listener name). Registrations hold every listener; the host/port
    the handlers put in are the first listener's."""
    if spec is first:
        return
    by_id = {b.node_id: b for b in brokers}
    for e in [*result.get("brokers", ()), *result.get("coordinators", ()), result]:
        nid = e.get("node_id", e.get("broker_id"))
        if nid is None or "host" not in e or e.get("port", -1) < 0:
            continue
        b = by_id.get(nid)
        ep = b.endpoint(spec.name) if b is not None and b.listeners else None
        if ep is None and nid == node_id:
            ep = (spec.advertised_host, spec.advertised_port)
        if ep is not None:
            e["host"], e["port"] = ep


def registered_listeners(config: BrokerConfig) -> tuple[tuple[str, str, str, int], ...]:
    """(name, protocol, advertised host, advertised port) of every listener, for the broker registration; empty
    for a lone PLAINTEXT listener (registered as before)."""
    pmap = parse_protocol_map(config.static.get("listener.security.protocol.map"))
    lsts = parse_listeners(config.listeners, "listeners")
    if len(lsts) == 1 and pmap.get(lsts[0].name.upper()) == "PLAINTEXT":
        return ()
    adv = {a.name.upper(): a for a in (
        parse_listeners(config.advertised_listeners, "advertised.listeners") if config.advertised_listeners else [])}
    out = []
    for lst in lsts:
        a = adv.get(lst.name.upper())
        out.append((lst.name, pmap.get(lst.name.upper(), lst.name.upper()),
                    a.host if a else (lst.host or "127.0.0.1"), a.port if a else lst.port))
    return tuple(out)
