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
    ssl_context: ssl.SSLContext | None = None
    cert_not_after: float | None = None   # the server certificate's notAfter (epoch seconds), for expiry alerts

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


def _prop(props: Mapping[str, str], listener: str, key: str) -> str | None:
    """A listener-scoped `listener.name.<l>.<key>` overrides the broker-wide `<key>`, as in Kafka."""
    return props.get(f"listener.name.{listener.lower()}.{key}", props.get(key))


def ssl_server_context(props: Mapping[str, str], listener: str) -> ssl.SSLContext:
    """The server side of a TLS listener from PEM key stores (`ssl.keystore.type=PEM`)."""
    kind = (_prop(props, listener, "ssl.keystore.type") or "PEM").upper()
    if kind != "PEM":
        raise ConfigError(f"ssl.keystore.type={kind} is not supported: use PEM")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    location = _prop(props, listener, "ssl.keystore.location")
    chain, key = _prop(props, listener, "ssl.keystore.certificate.chain"), _prop(props, listener, "ssl.keystore.key")
    password = _prop(props, listener, "ssl.key.password")
    try:
        if location:
            ctx.load_cert_chain(location, password=password)
        elif chain and key:
            _load_inline_chain(ctx, chain, key, password)
        else:
            raise ConfigError(f"listener {listener} needs ssl.keystore.location or ssl.keystore.certificate.chain")
        trust = _prop(props, listener, "ssl.truststore.location")
        if trust:
            ctx.load_verify_locations(cafile=trust)
        elif _prop(props, listener, "ssl.truststore.certificates"):
            ctx.load_verify_locations(cadata=_prop(props, listener, "ssl.truststore.certificates"))
    except (OSError, ssl.SSLError) as e:
        raise ConfigError(f"listener {listener}: cannot load TLS key material: {e}") from None
    auth = (_prop(props, listener, "ssl.client.auth") or "none").lower()
    if auth not in ("required", "requested", "none"):
        raise ConfigError(f"Invalid value {auth!r} for configuration ssl.client.auth")
    ctx.verify_mode = {"required": ssl.CERT_REQUIRED, "requested": ssl.CERT_OPTIONAL}.get(auth, ssl.CERT_NONE)
    return ctx


def _not_after(location: str | None, chain: str | None) -> float | None:
    """The first certificate's notAfter in epoch seconds (None if it cannot be read)."""
    import os
    import tempfile

    path = location
    try:
        if path is None and chain:
            fd, path = tempfile.mkstemp(suffix=".pem")
            with os.fdopen(fd, "w") as f:
                f.write(chain)
        decoded = ssl._ssl._test_decode_cert(path)  # type: ignore[attr-defined]  # the only stdlib X.509 reader
        return float(ssl.cert_time_to_seconds(decoded["notAfter"]))
    except (OSError, ssl.SSLError, KeyError, ValueError):
        return None
    finally:
        if path is not None and path != location:
            os.unlink(path)


def _load_inline_chain(ctx: ssl.SSLContext, chain: str, key: str, password: str | None) -> None:
    """`ssl.keystore.certificate.chain` / `ssl.keystore.key` hold PEM text; Python's ssl wants a file."""
    import os
    import tempfile

    fd, path = tempfile.mkstemp(suffix=".pem")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(key.strip() + "\n" + chain.strip() + "\n")
        ctx.load_cert_chain(path, password=password)
    finally:
        os.unlink(path)


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
            spec.ssl_context = ssl_server_context(props, lst.name)
            spec.cert_not_after = _not_after(_prop(props, lst.name, "ssl.keystore.location"),
                                             _prop(props, lst.name, "ssl.keystore.certificate.chain"))
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
