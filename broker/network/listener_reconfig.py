"""Per-broker `listener.name.<l>.ssl.*` dynamic configs (KIP-226): the checks an alter makes before it is stored,
and the reload of a TLS listener's key stores when they change, on this broker's listeners and on its inter-broker
connections (the replica fetchers, the transaction markers), as Kafka reconfigures its SslFactory instances.

Password-type values (`ssl.key.password`, `ssl.keystore.key`, ...) are stored encrypted with
`password.encoder.secret` (broker/security/password_encoder.py), and refused without it, as in Kafka's ZooKeeper
mode. Connections already open keep the key material they were opened with.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from broker.config import BrokerConfig, ConfigError
from broker.network import listener_tls
from broker.network.client_security import client_tls
from broker.network.listener_tls import ListenerTls, is_password, split_listener_key
from broker.network.listeners import ServerSecurity
from broker.security.password_encoder import PasswordEncoder, PasswordEncoderError

log = logging.getLogger(__name__)


class ResourceConfigError(ConfigError):
    """Refused where Kafka answers INVALID_CONFIG naming the resource (ZkAdminManager's ConfigException path): a
    password without `password.encoder.secret`, or a store file rewritten in place that fails the checks."""


class ListenerReconfiguration:
    """This broker's TLS listeners as its dynamic configs set them."""

    def __init__(self, config: BrokerConfig, security: ServerSecurity, fetchers: Any) -> None:
        self._static = dict(config.static)
        self._security = security
        self._fetchers = fetchers   # .inter_broker_listener, .client_security (ReplicaFetcherManager)
        try:
            self._encoder = PasswordEncoder.from_config(config.static)
        except PasswordEncoderError as e:
            raise ConfigError(str(e)) from None

    # ---------------------------------------------------------------- stored values

    def decoded(self, stored: Mapping[str, str]) -> dict[str, str]:
        """The stored configs with their passwords in clear; one that cannot be decoded is left out, as Kafka
        does ("Dynamic password config ... could not be decoded, ignoring")."""
        out = {}
        for key, value in stored.items():
            if not is_password(key):
                out[key] = value
                continue
            try:
                if self._encoder is None:
                    raise PasswordEncoderError("Password encoder secret not configured")
                out[key] = self._encoder.decode(value)
            except PasswordEncoderError as e:
                log.error("Dynamic password config %s could not be decoded, ignoring: %s", key, e)
        return out

    def encoded(self, configs: Mapping[str, str]) -> dict[str, str]:
        """What to store: every password encrypted (DynamicBrokerConfig.toPersistentProps); ResourceConfigError
        with Kafka's message without a secret."""
        out = dict(configs)
        for key, value in configs.items():
            if is_password(key) and value:
                if self._encoder is None:
                    raise ResourceConfigError("Password encoder secret not configured")
                out[key] = self._encoder.encode(value)
        return out

    # ---------------------------------------------------------------- listeners

    def _props(self, dynamic: Mapping[str, str]) -> dict[str, str]:
        """server.properties with this broker's dynamic listener keys over it (a listener's own key wins)."""
        return {**self._static, **{k: v for k, v in dynamic.items() if split_listener_key(k)}}

    def check(self, dynamic: Mapping[str, str]) -> dict[str, ListenerTls]:
        """The TLS listeners whose key material `dynamic` (decoded) changes, each loaded and checked as
        SslFactory.validateReconfiguration does; ConfigError with Kafka's message when one is refused
        (ResourceConfigError when only a rewritten store file is)."""
        props = self._props(dynamic)
        inter_broker = (self._fetchers.inter_broker_listener or "").upper()
        out = {}
        for spec in self._security.listeners:
            current = spec.tls_material
            if current is None or not listener_tls.needs_reload(current, props, spec.name):
                continue
            try:
                out[spec.name] = listener_tls.reconfigure(current, props, spec.name,
                                                          inter_broker=spec.name.upper() == inter_broker)
            except ConfigError as e:
                if listener_tls.settings_changed(current, props, spec.name):
                    raise
                raise ResourceConfigError(str(e)) from None
        return out

    def apply(self, dynamic: Mapping[str, str], updates: Mapping[str, ListenerTls]) -> None:
        """New connections on each updated listener (and new inter-broker connections through it) use its new
        key material."""
        props = self._props(dynamic)
        for name, material in updates.items():
            spec = self._security.spec(name)
            if spec is not None:
                spec.tls_material = material
                log.info("Listener %s reloaded its SSL key stores (certificate %s, valid until %s)", name,
                         material.subject, material.not_after)
            client = self._fetchers.client_security
            if client is not None and client.listener.upper() == name.upper() and client.ssl_context is not None:
                client.ssl_context = client_tls(props, name)

    def on_change(self, stored: Mapping[str, str]) -> None:
        """This broker's dynamic configs changed (its own alter, or a notification): reload what they change."""
        dynamic = self.decoded(stored)
        try:
            updates = self.check(dynamic)
        except ConfigError as e:   # checked when altered; a store file may have changed since
            log.error("Per-broker SSL configs could not be applied: %s", e)
            return
        self.apply(dynamic, updates)
