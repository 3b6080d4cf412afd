"""One request to one broker, over whatever the client configuration says (PLAINTEXT, SSL, SASL_PLAINTEXT or
SASL_SSL with PLAIN or SCRAM), for the APIs confluent-kafka has no admin call for (ListTransactions,
DescribeTransactions, DescribeProducers) and for the launcher's own checks. It reuses the broker's inter-broker
client (broker/replication/client.py, broker/network/client_security.py), so there is one SASL client in the tree.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Mapping
from typing import Any

from broker.network.client_security import ClientSecurity
from broker.replication.client import BrokerConnection
from broker.security import sasl

MECHANISMS = (sasl.PLAIN, "SCRAM-SHA-256", "SCRAM-SHA-512")


class UnsupportedSecurity(ValueError):
    """A client configuration this client cannot speak (GSSAPI, OAUTHBEARER, an unknown protocol)."""


def client_security(conf: Mapping[str, Any]) -> ClientSecurity | None:
    """How to connect, from librdkafka settings (common/client_properties.py makes them from a Java file);
    None for PLAINTEXT."""
    protocol = str(conf.get("security.protocol", "PLAINTEXT")).upper()
    if protocol == "PLAINTEXT":
        return None
    if protocol not in ("SSL", "SASL_PLAINTEXT", "SASL_SSL"):
        raise UnsupportedSecurity(f"security.protocol={protocol} is not supported")
    ctx = None
    if protocol.endswith("SSL"):
        ctx = ssl.create_default_context(cafile=conf.get("ssl.ca.location"))
        if str(conf.get("ssl.endpoint.identification.algorithm", "https")).lower() == "none":
            ctx.check_hostname = False
        if conf.get("ssl.certificate.location"):
            ctx.load_cert_chain(conf["ssl.certificate.location"], conf.get("ssl.key.location"),
                                conf.get("ssl.key.password"))
    mechanism = ""
    if protocol.startswith("SASL"):
        mechanism = str(conf.get("sasl.mechanisms", conf.get("sasl.mechanism", "GSSAPI"))).upper()
        if mechanism not in MECHANISMS:
            raise UnsupportedSecurity(f"sasl.mechanism={mechanism} is not supported ({', '.join(MECHANISMS)} are)")
    return ClientSecurity(protocol, protocol, ctx, mechanism, str(conf.get("sasl.username", "")),
                          str(conf.get("sasl.password", "")))


async def request(host: str, port: int, security: ClientSecurity | None, api_key: int, version: int,
                  body: dict[str, Any], timeout_s: float, client_id: str = "kafkascope") -> Any:
    """Connect (TLS and SASL as `security` says), send one request, return the decoded kio response body."""
    conn = BrokerConnection(host, port, client_id, security)
    await conn.connect(timeout_s)
    try:
        return await conn.request(api_key, version, body, timeout_s)
    finally:
        conn.close()


def request_sync(host: str, port: int, security: ClientSecurity | None, api_key: int, version: int,
                 body: dict[str, Any], timeout_s: float, client_id: str = "kafkascope") -> Any:
    """`request` from synchronous code (the CLI)."""
    return asyncio.run(request(host, port, security, api_key, version, body, timeout_s, client_id))
