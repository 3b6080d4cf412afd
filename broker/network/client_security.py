"""The broker as a client of another broker's inter-broker listener (`inter.broker.listener.name`): TLS from the
trust store and SASL PLAIN or SCRAM (`sasl.mechanism.inter.broker.protocol`) with the credentials in that
listener's JAAS `username`/`password` options, as Kafka's brokers authenticate to each other."""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from broker.config import BrokerConfig, ConfigError
from broker.network.listener_tls import listener_prop, ssl_client_context
from broker.network.listeners import ListenerSpec, listener_specs
from broker.security import plain, sasl, scram
from broker.security.scram_sasl import ScramSaslClient
from common import jaas

if TYPE_CHECKING:
    from broker.replication.client import BrokerConnection

SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36


@dataclass
class ClientSecurity:
    """How to open a connection to a broker's inter-broker listener."""

    listener: str
    protocol: str
    ssl_context: ssl.SSLContext | None = None
    mechanism: str = ""
    username: str = ""
    password: str = ""

    async def authenticate(self, conn: BrokerConnection, timeout_s: float) -> None:
        """SaslHandshake v1 then SaslAuthenticate v2 until the exchange completes; ConnectionError if refused."""
        if not self.mechanism:
            return
        hs = await conn.request(SASL_HANDSHAKE, 1, {"mechanism": self.mechanism}, timeout_s)
        if hs.error_code != 0:
            raise ConnectionError(f"SaslHandshake for {self.mechanism} refused: error {int(hs.error_code)}")
        if self.mechanism == sasl.PLAIN:
            await self._step(conn, plain.plain_client_response(self.username, self.password), timeout_s)
            return
        client = ScramSaslClient(scram.SCRAM_MECHANISMS[self.mechanism], self.username, self.password)
        challenge = await self._step(conn, client.first(), timeout_s)
        final = await self._step(conn, client.respond(challenge), timeout_s)
        client.respond(final)

    @staticmethod
    async def _step(conn: BrokerConnection, token: bytes, timeout_s: float) -> bytes:
        resp: Any = await conn.request(SASL_AUTHENTICATE, 2, {"auth_bytes": token}, timeout_s)
        if resp.error_code != 0:
            raise ConnectionError(f"inter-broker SASL authentication failed: {resp.error_message}")
        return bytes(resp.auth_bytes)


def inter_broker_listener(config: BrokerConfig, specs: list[ListenerSpec] | None = None) -> ListenerSpec:
    """`inter.broker.listener.name`, else the listener of `security.inter.broker.protocol`, else the first."""
    specs = specs if specs is not None else listener_specs(config)
    name = config.static.get("inter.broker.listener.name")
    if name is None and config.static.get("security.inter.broker.protocol"):
        proto = config.static["security.inter.broker.protocol"].upper()
        name = next((s.name for s in specs if s.protocol == proto), None)
    return next((s for s in specs if name is not None and s.name.upper() == name.upper()), specs[0])


def client_tls(props: Mapping[str, str], listener: str) -> ssl.SSLContext:
    """The TLS side of a connection to `listener` on another broker: its trust store, and its key store presented
    when the other side asks (`ssl.client.auth`)."""
    check = listener_prop(props, listener, "ssl.endpoint.identification.algorithm") != ""
    return ssl_client_context(props, listener, check_hostname=check)


def client_security(config: BrokerConfig, spec: ListenerSpec) -> ClientSecurity | None:
    """What this broker needs to connect to `spec` on another broker; None for PLAINTEXT."""
    if spec.protocol == "PLAINTEXT":
        return None
    props = config.static
    out = ClientSecurity(spec.name, spec.protocol)
    if spec.tls:
        out.ssl_context = client_tls(props, spec.name)
    if spec.sasl:
        mech = props.get("sasl.mechanism.inter.broker.protocol", "GSSAPI")
        entry = spec.jaas.get(mech)
        if entry is None:
            raise ConfigError(f"sasl.mechanism.inter.broker.protocol={mech} is not enabled on listener {spec.name}")
        out.mechanism = mech
        out.username, out.password = jaas.login_credentials(entry)
    return out


def configure_inter_broker(config: BrokerConfig, fetchers: Any) -> None:
    """Point the replica fetchers at the inter-broker listener of the other brokers, with its security."""
    specs = listener_specs(config)
    spec = inter_broker_listener(config, specs)
    fetchers.inter_broker_listener = spec.name
    fetchers.client_security = client_security(config, spec)
