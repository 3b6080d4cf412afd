"""A TLS listener's key stores replaced at run time (broker/network/listener_tls.py): Kafka's SslFactory checks on
the new stores, and when a store counts as changed. Real certificates from the openssl CLI, no broker."""

from __future__ import annotations

import os
import shutil

import pytest

from broker.broker_configs import validate_dynamic
from broker.config import ConfigError
from broker.network import listener_tls
from kafkascope.local.security import make_certs
from tests.security_wire.rotation import certs_or_skip, issue

L = "SSL"
KEY = "listener.name.ssl.ssl.keystore.location"


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    d = tmp_path_factory.mktemp("rotation")
    files = certs_or_skip(d)
    stores = {"same": issue(files, d / "same.pem", days=5),
              "other_cn": issue(files, d / "other_cn.pem", subject="/CN=other-host"),
              "fewer_sans": issue(files, d / "fewer_sans.pem", san="DNS:localhost"),
              "more_sans": issue(files, d / "more_sans.pem", san="IP:127.0.0.1,DNS:localhost,DNS:kafka-0")}
    foreign = make_certs(d / "foreign")   # same subject and SANs, another CA
    return {**files, **stores, "foreign": foreign["server"], "foreign_ca": foreign["ca"]}


def props(certs, **extra: str) -> dict[str, str]:
    return {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(certs["server"]),
            "ssl.truststore.type": "PEM", "ssl.truststore.location": str(certs["ca"]), **extra}


def test_same_subject_is_taken_and_its_expiry_read(certs):
    old = listener_tls.load(props(certs), L)
    new = listener_tls.reconfigure(old, props(certs, **{KEY: str(certs["same"])}), L, inter_broker=True)
    assert new.subject == old.subject == "CN=localhost"
    assert new.not_after is not None and old.not_after is not None
    assert new.not_after - old.not_after == pytest.approx(3 * 86400, abs=120)   # issued for 5 days, not 2


def test_another_subject_is_refused_unless_allowed(certs):
    old = listener_tls.load(props(certs), L)
    with pytest.raises(ConfigError) as e:
        listener_tls.reconfigure(old, props(certs, **{KEY: str(certs["other_cn"])}), L, inter_broker=False)
    assert str(e.value) == (
        "Validation of dynamic config update of SSLFactory failed: org.apache.kafka.common.config.ConfigException: "
        "Keystore DistinguishedName does not match:  existing={alias=kafka, DN=CN=localhost}, "
        "new={alias=kafka, DN=CN=other-host}")
    allowed = props(certs, **{KEY: str(certs["other_cn"]), "ssl.allow.dn.changes": "true"})
    assert listener_tls.reconfigure(old, allowed, L, inter_broker=False).subject == "CN=other-host"


def test_a_lost_subject_alt_name_is_refused_a_new_one_taken(certs):
    old = listener_tls.load(props(certs), L)
    with pytest.raises(ConfigError, match=r"Keystore SubjectAltNames do not match:  existing=\{alias=kafka, "
                                          r"SAN=\[\[2, localhost\], \[7, 127.0.0.1\]\]\}, new=\{alias=kafka, "
                                          r"SAN=\[\[2, localhost\]\]\}"):
        listener_tls.reconfigure(old, props(certs, **{KEY: str(certs["fewer_sans"])}), L, inter_broker=False)
    more = listener_tls.reconfigure(old, props(certs, **{KEY: str(certs["more_sans"])}), L, inter_broker=False)
    assert (2, "kafka-0") in more.subject_alt_names
    fewer = props(certs, **{KEY: str(certs["fewer_sans"]), "listener.name.ssl.ssl.allow.san.changes": "true"})
    assert listener_tls.reconfigure(old, fewer, L, inter_broker=False).subject_alt_names == {(2, "localhost")}


def test_inter_broker_listener_needs_a_handshake_each_way(certs):
    """A key store from a CA the old truststore does not know: fine for a client listener, refused on the
    inter-broker one (brokers still on the old stores could not connect)."""
    old = listener_tls.load(props(certs), L)
    foreign = props(certs, **{KEY: str(certs["foreign"])})
    assert listener_tls.reconfigure(old, foreign, L, inter_broker=False).subject == "CN=localhost"
    with pytest.raises(ConfigError, match="SSLHandshakeException: .*CERTIFICATE_VERIFY_FAILED"):
        listener_tls.reconfigure(old, foreign, L, inter_broker=True)


def test_unreadable_store_and_added_truststore_are_refused(certs, tmp_path):
    old = listener_tls.load(props(certs), L)
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a key store\n")
    fifo = tmp_path / "fifo.pem"   # would block the broker's loop if read
    os.mkfifo(fifo)
    huge = tmp_path / "huge.pem"
    with open(huge, "wb") as f:
        f.truncate(listener_tls.MAX_STORE_BYTES + 1)
    for path in (tmp_path / "missing.pem", garbage, fifo, huge):
        with pytest.raises(ConfigError) as e:
            listener_tls.reconfigure(old, props(certs, **{KEY: str(path)}), L, inter_broker=False)
        assert str(e.value) == ("Validation of dynamic config update of SSLFactory failed: org.apache.kafka.common."
                                f"errors.InvalidConfigurationException: Failed to load PEM SSL keystore {path}")
    with pytest.raises(ConfigError, match="SSL key store password cannot be specified with PEM format, only key "
                                          "password may be specified"):
        listener_tls.reconfigure(old, props(certs, **{"listener.name.ssl.ssl.keystore.password": "pw"}), L,
                                 inter_broker=False)
    untrusting = {k: v for k, v in props(certs).items() if "truststore" not in k}
    bare = listener_tls.load(untrusting, L)
    with pytest.raises(ConfigError, match="Cannot add SSL truststore to an existing listener for which no "
                                          "truststore was configured."):
        listener_tls.reconfigure(bare, props(certs), L, inter_broker=False)


def test_changed_means_other_settings_or_a_rewritten_file(certs, tmp_path):
    store = tmp_path / "live.pem"
    shutil.copy(certs["server"], store)
    p = props(certs, **{KEY: str(store)})
    current = listener_tls.load(p, L)
    assert not listener_tls.needs_reload(current, p, L)
    assert listener_tls.needs_reload(current, props(certs, **{KEY: str(certs["same"])}), L)
    st = os.stat(store)
    os.utime(store, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))   # rewritten in place
    assert listener_tls.needs_reload(current, p, L)


def test_dynamic_ssl_keys_need_a_listener_prefix_and_a_broker_id():
    with pytest.raises(ValueError) as e:
        validate_dynamic({"ssl.keystore.location": "/x.pem"})
    assert str(e.value) == ("These security configs can be dynamically updated only per-listener using the "
                            "listener prefix: HashSet(ssl.keystore.location)")
    with pytest.raises(ValueError) as e:
        validate_dynamic({KEY: "/x.pem"}, per_broker=False)
    assert str(e.value) == ("Cannot update these configs at default cluster level, broker id must be specified: "
                            f"Set({KEY})")
    assert validate_dynamic({KEY: "/x.pem", "listener.name.ssl.ssl.key.password": "pw"}) == \
        {KEY: "/x.pem", "listener.name.ssl.ssl.key.password": "pw"}
    with pytest.raises(ValueError, match=r"Cannot update these configs dynamically: "
                                         r"Set\(listener.name.ssl.ssl.client.auth\)"):
        validate_dynamic({"listener.name.ssl.ssl.client.auth": "required"})


def _peer_of(server_ctx, client_ctx) -> dict:
    """The client certificate a server sees in an in-memory handshake."""
    import ssl

    c_in, c_out, s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    client, server = client_ctx.wrap_bio(c_in, c_out), server_ctx.wrap_bio(s_in, s_out, server_side=True)
    for _ in range(20):
        for side in (client, server):
            try:
                side.do_handshake()
            except ssl.SSLWantReadError:
                pass
        s_in.write(c_out.read())
        c_in.write(s_out.read())
    return server.getpeercert()


def test_inter_broker_connections_take_the_new_key_store(certs, tmp_path):
    """A rotation on the inter-broker listener: the replica fetchers' next connections present the new
    certificate (Kafka reconfigures the fetchers' channel builders too)."""
    from types import SimpleNamespace

    from broker.config import BrokerConfig
    from broker.network.client_security import client_security, inter_broker_listener
    from broker.network.listener_reconfig import ListenerReconfiguration
    from broker.network.listeners import ServerSecurity, listener_specs

    cfg = BrokerConfig.from_properties({"log.dirs": str(tmp_path), "listeners": "SSL://127.0.0.1:0",
                                        "listener.name.ssl.ssl.client.auth": "required", **props(certs)})
    security = ServerSecurity(cfg)
    fetchers = SimpleNamespace(inter_broker_listener="SSL",
                               client_security=client_security(cfg, inter_broker_listener(cfg, listener_specs(cfg))))
    reconfig = ListenerReconfiguration(cfg, security, fetchers)
    old_client = fetchers.client_security.ssl_context
    server = security.spec("SSL").ssl_context
    before = ssl_not_after(_peer_of(server, old_client))
    reconfig.on_change({KEY: str(certs["same"])})
    assert security.spec("SSL").cert_not_after == ssl_not_after(_peer_of(server, fetchers.client_security.ssl_context))
    assert ssl_not_after(_peer_of(server, fetchers.client_security.ssl_context)) - before == \
        pytest.approx(3 * 86400, abs=120)


def ssl_not_after(cert: dict) -> float:
    import ssl

    return float(ssl.cert_time_to_seconds(cert["notAfter"]))
