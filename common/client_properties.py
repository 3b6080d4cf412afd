"""Kafka client properties files (`--command-config client.properties`) for librdkafka-based clients.

An SRE's client.properties is written for Kafka's Java clients and tools: `sasl.jaas.config` with a login module,
`sasl.mechanism`, `ssl.truststore.*` / `ssl.keystore.*`. Every kafkascope component talks to Kafka through
librdkafka (confluent-kafka), whose names differ, so one translation here serves the CLI tools, xmonitor, the lag
monitor and `kafkascope up`. librdkafka's own names pass through unchanged, so a file may use either spelling.
What librdkafka cannot do (a JKS store, an OAUTHBEARER login module) is an error naming the property.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from common import jaas
from common.java_properties import parse_properties


class ClientPropertiesError(ValueError):
    """A client properties file that cannot be read or has no librdkafka equivalent."""


# Java-client settings with no librdkafka counterpart and no effect on what is connected to or how it is
# authenticated: dropped rather than refused, so a file shared with kafka-*.sh works here unchanged.
_JAVA_ONLY = frozenset({
    "ssl.truststore.type", "ssl.keystore.type", "ssl.protocol", "ssl.enabled.protocols", "ssl.provider",
    "ssl.keymanager.algorithm", "ssl.trustmanager.algorithm", "ssl.secure.random.implementation",
    "ssl.engine.factory.class", "sasl.login.class", "sasl.login.callback.handler.class",
    "sasl.client.callback.handler.class", "default.api.timeout.ms", "security.providers",
    "sasl.login.refresh.window.factor", "sasl.login.refresh.window.jitter", "sasl.login.refresh.min.period.seconds",
    "sasl.login.refresh.buffer.seconds",
})
_MODULE_MECHANISMS = {jaas.PLAIN_LOGIN_MODULE: {"PLAIN"},
                      jaas.SCRAM_LOGIN_MODULE: {"SCRAM-SHA-256", "SCRAM-SHA-512"}}


def read(path: str | Path) -> dict[str, str]:
    """The properties of a file, as written (no translation)."""
    try:
        return parse_properties(Path(path).read_text())
    except OSError as e:
        raise ClientPropertiesError(f"cannot read {path}: {e.strerror}") from None


def librdkafka_config(props: Mapping[str, str]) -> dict[str, str]:
    """librdkafka settings equivalent to Java client properties (librdkafka names pass through)."""
    out: dict[str, str] = {}
    for key, value in props.items():
        if key in _JAVA_ONLY or key.startswith(("ssl.truststore.", "ssl.keystore.", "sasl.jaas.")):
            continue
        out["sasl.mechanisms" if key == "sasl.mechanism" else key] = value
    if "sasl.jaas.config" in props:
        out.update(_jaas_credentials(props["sasl.jaas.config"], out.get("sasl.mechanisms", "GSSAPI")))
    out.update(_truststore(props))
    out.update(_keystore(props))
    if out.get("ssl.endpoint.identification.algorithm") == "":
        out["ssl.endpoint.identification.algorithm"] = "none"   # Java's empty value disables the host check
    return out


def load(path: str | Path | None) -> dict[str, str]:
    """librdkafka settings from a client properties file; {} for no file."""
    return librdkafka_config(read(path)) if path else {}


def _jaas_credentials(text: str, mechanism: str) -> dict[str, str]:
    try:
        entry = jaas.parse_single_module(text)
        allowed = _MODULE_MECHANISMS.get(entry.login_module)
        if allowed is None:
            raise ClientPropertiesError(
                f"sasl.jaas.config: login module {entry.login_module} is not supported (PlainLoginModule and "
                "ScramLoginModule are)")
        if mechanism.upper() not in allowed:
            raise ClientPropertiesError(
                f"sasl.jaas.config: {entry.login_module.rsplit('.', 1)[-1]} does not match sasl.mechanism={mechanism}")
        user, password = jaas.login_credentials(entry)
    except jaas.JaasConfigError as e:
        raise ClientPropertiesError(f"sasl.jaas.config: {e}") from None
    return {"sasl.username": user, "sasl.password": password}


def _store_type(props: Mapping[str, str], store: str) -> str:
    return props.get(f"ssl.{store}.type", "JKS").upper()


def _truststore(props: Mapping[str, str]) -> dict[str, str]:
    if "ssl.truststore.certificates" in props:
        return {"ssl.ca.pem": props["ssl.truststore.certificates"]}
    location = props.get("ssl.truststore.location")
    if location is None:
        return {}
    if _store_type(props, "truststore") != "PEM":
        raise ClientPropertiesError(
            f"ssl.truststore.location: a {_store_type(props, 'truststore')} trust store cannot be read here; "
            "export the CA certificates to PEM (keytool -exportcert -rfc) and set ssl.truststore.type=PEM")
    return {"ssl.ca.location": location}


def _keystore(props: Mapping[str, str]) -> dict[str, str]:
    if "ssl.keystore.certificate.chain" in props or "ssl.keystore.key" in props:
        out = {"ssl.certificate.pem": props.get("ssl.keystore.certificate.chain", ""),
               "ssl.key.pem": props.get("ssl.keystore.key", "")}
    elif "ssl.keystore.location" in props:
        location, kind = props["ssl.keystore.location"], _store_type(props, "keystore")
        if kind == "PEM":       # private key and certificate chain in one file, as Kafka's PEM key store
            out = {"ssl.key.location": location, "ssl.certificate.location": location}
        elif kind == "PKCS12":  # librdkafka reads PKCS#12 key stores itself
            out = {"ssl.keystore.location": location}
            if "ssl.keystore.password" in props:
                out["ssl.keystore.password"] = props["ssl.keystore.password"]
            return out
        else:
            raise ClientPropertiesError(
                f"ssl.keystore.location: a {kind} key store cannot be read here; use ssl.keystore.type=PKCS12 or PEM")
    else:
        return {}
    if "ssl.key.password" in props:
        out["ssl.key.password"] = props["ssl.key.password"]
    return out
