"""A TLS listener's key material, loaded at start and again when `listener.name.<l>.ssl.*` changes at run time
(KIP-226 keystore updates: certificate rotation without a restart), with Kafka's SslFactory checks on the new
material: the same certificate subject and SubjectAltNames unless `ssl.allow.dn.changes` / `ssl.allow.san.changes`,
no truststore added to a listener without one, and on the inter-broker listener a handshake each way between the
old and the new stores. A store file rewritten in place is picked up when an alter names it again (Kafka's
`reloadUpdatedFilesWithoutConfigChange`), never by itself.
"""

from __future__ import annotations

import logging
import os
import ssl
import stat
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass

from broker.config import ConfigError

# SslConfigs.RECONFIGURABLE_CONFIGS: what a listener takes at run time.
RECONFIGURABLE = ("ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
                  "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
                  "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.truststore.certificates")
# Those of type PASSWORD in KafkaConfig: described as null, stored encoded (password.encoder.secret).
PASSWORDS = frozenset({"ssl.keystore.password", "ssl.key.password", "ssl.truststore.password",
                       "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.truststore.certificates"})
ALLOW_DN_CHANGES, ALLOW_SAN_CHANGES = "ssl.allow.dn.changes", "ssl.allow.san.changes"
_SAN_TYPES = {"email": 1, "DNS": 2, "DirName": 4, "URI": 6, "IP Address": 7}   # X509Certificate's GeneralName tags
_HANDSHAKE_STEPS = 50
MAX_STORE_BYTES = 16 * 1024 * 1024
_CONFIG_EXCEPTION = "org.apache.kafka.common.config.ConfigException"
_INVALID_CONFIGURATION = "org.apache.kafka.common.errors.InvalidConfigurationException"
log = logging.getLogger(__name__)


class StoreError(ConfigError):
    """A key or trust store that cannot be loaded (the reason is the message; `path` the file, if any)."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(reason)
        self.path = path


def listener_prop(props: Mapping[str, str], listener: str, key: str) -> str | None:
    """A listener-scoped `listener.name.<l>.<key>` overrides the broker-wide `<key>`, as in Kafka."""
    return props.get(f"listener.name.{listener.lower()}.{key}", props.get(key))


def split_listener_key(key: str) -> tuple[str, str] | None:
    """`listener.name.<l>.<base>` -> (l, base); None for a key without the listener prefix."""
    if not key.startswith("listener.name."):
        return None
    listener, sep, base = key[len("listener.name."):].partition(".")
    return (listener, base) if sep and listener else None


def is_password(key: str) -> bool:
    """DynamicBrokerConfig.isPasswordConfig: the key (or its listener-prefixed form) is of type PASSWORD."""
    return any(key.endswith(p) for p in PASSWORDS)


def ssl_server_context(props: Mapping[str, str], listener: str) -> ssl.SSLContext:
    """The server side of a TLS listener from PEM key stores (`ssl.keystore.type=PEM`)."""
    kind = (listener_prop(props, listener, "ssl.keystore.type") or "PEM").upper()
    if kind != "PEM":
        raise ConfigError(f"ssl.keystore.type={kind} is not supported: use PEM")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _load_keystore(ctx, props, listener, required=True)
    _load_truststore(ctx, props, listener)
    auth = (listener_prop(props, listener, "ssl.client.auth") or "none").lower()
    if auth not in ("required", "requested", "none"):
        raise ConfigError(f"Invalid value {auth!r} for configuration ssl.client.auth")
    ctx.verify_mode = {"required": ssl.CERT_REQUIRED, "requested": ssl.CERT_OPTIONAL}.get(auth, ssl.CERT_NONE)
    return ctx


def ssl_client_context(props: Mapping[str, str], listener: str, check_hostname: bool) -> ssl.SSLContext:
    """This broker as a client of `listener`: its truststore (the system's without one), and its keystore
    presented when the server asks for a certificate (`ssl.client.auth`)."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = check_hostname
    _load_truststore(ctx, props, listener)
    _load_keystore(ctx, props, listener, required=False)
    return ctx


def _load_keystore(ctx: ssl.SSLContext, props: Mapping[str, str], listener: str, required: bool) -> None:
    location = listener_prop(props, listener, "ssl.keystore.location")
    chain, key = (listener_prop(props, listener, "ssl.keystore.certificate.chain"),
                  listener_prop(props, listener, "ssl.keystore.key"))
    password = listener_prop(props, listener, "ssl.key.password")
    if (location or chain) and listener_prop(props, listener, "ssl.keystore.password"):
        raise StoreError(location or "", "SSL key store password cannot be specified with PEM format, only key "
                                         "password may be specified")
    try:
        if location:
            _regular_file(location)
            ctx.load_cert_chain(location, password=password)
        elif chain and key:
            with _pem_file(key.strip() + "\n" + chain.strip() + "\n") as path:
                ctx.load_cert_chain(path, password=password)
        elif required:
            raise ConfigError(f"listener {listener} needs ssl.keystore.location or ssl.keystore.certificate.chain")
    except (OSError, ssl.SSLError) as e:
        raise StoreError(location or "", f"listener {listener}: cannot load TLS key material: {e}") from None


def _load_truststore(ctx: ssl.SSLContext, props: Mapping[str, str], listener: str) -> None:
    trust = listener_prop(props, listener, "ssl.truststore.location")
    try:
        if trust:
            _regular_file(trust)
            ctx.load_verify_locations(cafile=trust)
        elif certificates := listener_prop(props, listener, "ssl.truststore.certificates"):
            ctx.load_verify_locations(cadata=certificates)
    except (OSError, ssl.SSLError) as e:
        raise StoreError(trust or "", f"listener {listener}: cannot load TLS trust store: {e}") from None


def _regular_file(path: str) -> None:
    """A store must be a regular file of sane size: a FIFO or a device named by an alter would block or exhaust
    the event loop that reads it."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise OSError(f"{path} is not a regular file")
    if st.st_size > MAX_STORE_BYTES:
        raise OSError(f"{path} is {st.st_size} bytes, more than a key store's {MAX_STORE_BYTES}")


class _pem_file:
    """PEM text in a private temporary file for as long as the `with` lasts (Python's ssl reads only files)."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._path = ""

    def __enter__(self) -> str:
        fd, self._path = tempfile.mkstemp(suffix=".pem")
        with os.fdopen(fd, "w") as f:
            f.write(self._text)
        return self._path

    def __exit__(self, *exc: object) -> None:
        os.unlink(self._path)


def server_certificate(props: Mapping[str, str], listener: str) -> dict | None:
    """The listener's own (first) certificate, decoded; None when it cannot be read."""
    location = listener_prop(props, listener, "ssl.keystore.location")
    chain = listener_prop(props, listener, "ssl.keystore.certificate.chain")
    try:
        if location:
            return ssl._ssl._test_decode_cert(location)  # type: ignore[attr-defined]  # the only stdlib X.509 reader
        if chain:
            with _pem_file(chain) as path:
                return ssl._ssl._test_decode_cert(path)  # type: ignore[attr-defined]
    except (OSError, ssl.SSLError, ValueError):
        return None
    return None


def _file_stamp(path: str | None) -> tuple[str, int] | None:
    """What tells a rewritten store file (FileBasedStore.modified: its last-modified time)."""
    if not path:
        return None
    try:
        return path, os.stat(path).st_mtime_ns
    except OSError:
        return path, -1


@dataclass(frozen=True)
class ListenerTls:
    """A listener's loaded key material: the server context, the settings and files it came from, and the
    certificate facts Kafka's checks compare."""

    context: ssl.SSLContext
    settings: tuple[tuple[str, str | None], ...]   # the reconfigurable keys' effective values
    files: tuple[tuple[str, int] | None, ...]      # (path, mtime) of the keystore and truststore files
    subject: str | None
    subject_alt_names: frozenset[tuple[int, str]]
    not_after: float | None
    has_truststore: bool


def _settings(props: Mapping[str, str], listener: str) -> tuple[tuple[str, str | None], ...]:
    return tuple((key, listener_prop(props, listener, key)) for key in RECONFIGURABLE)


def _files(props: Mapping[str, str], listener: str) -> tuple[tuple[str, int] | None, ...]:
    return (_file_stamp(listener_prop(props, listener, "ssl.keystore.location")),
            _file_stamp(listener_prop(props, listener, "ssl.truststore.location")))


def _rdn_string(subject: tuple) -> str:
    """X500Principal.toString's order: the most specific RDN (CN) first."""
    return ", ".join("+".join(f"{_SHORT_NAMES.get(k, k)}={v}" for k, v in rdn) for rdn in reversed(subject))


_SHORT_NAMES = {"commonName": "CN", "organizationName": "O", "organizationalUnitName": "OU", "countryName": "C",
                "localityName": "L", "stateOrProvinceName": "ST", "emailAddress": "EMAILADDRESS"}


def load(props: Mapping[str, str], listener: str) -> ListenerTls:
    """The listener's key material as `props` configure it; ConfigError when it cannot be loaded."""
    context = ssl_server_context(props, listener)
    cert = server_certificate(props, listener) or {}
    not_after = ssl.cert_time_to_seconds(cert["notAfter"]) if "notAfter" in cert else None
    sans = frozenset((_SAN_TYPES.get(kind, 0), value) for kind, value in cert.get("subjectAltName", ()))
    trust = bool(listener_prop(props, listener, "ssl.truststore.location") or
                 listener_prop(props, listener, "ssl.truststore.certificates"))
    subject = _rdn_string(cert["subject"]) if "subject" in cert else None
    return ListenerTls(context, _settings(props, listener), _files(props, listener), subject, sans,
                       float(not_after) if not_after is not None else None, trust)


def needs_reload(current: ListenerTls, props: Mapping[str, str], listener: str) -> bool:
    """DefaultSslEngineFactory.shouldBeRebuilt: other settings, or a store file modified since loading."""
    return settings_changed(current, props, listener) or current.files != _files(props, listener)


def reconfigure(current: ListenerTls, props: Mapping[str, str], listener: str, inter_broker: bool) -> ListenerTls:
    """The listener's new key material after Kafka's checks (SslFactory.validateReconfiguration); ConfigError
    with Kafka's message (its exception class named, as kafka-configs.sh prints it) when the new stores are
    refused. Why a store did not load goes to the log; Kafka's message names only the file."""
    try:
        new = load(props, listener)
    except StoreError as e:
        log.warning("listener %s: the new key stores are refused: %s", listener, e)
        if "PEM format" in str(e):
            raise _refused(f"{_INVALID_CONFIGURATION}: {e}") from None
        raise _refused(f"{_INVALID_CONFIGURATION}: Failed to load PEM SSL keystore {e.path}") from None
    if not current.has_truststore and new.has_truststore:
        raise _refused(f"{_CONFIG_EXCEPTION}: Cannot add SSL truststore to an existing listener for which no "
                       "truststore was configured.")
    if not _flag(props, listener, ALLOW_DN_CHANGES) and \
            (new.subject or "").lower() != (current.subject or "").lower():
        raise _refused(f"{_CONFIG_EXCEPTION}: Keystore DistinguishedName does not match:  existing={{alias=kafka, "
                       f"DN={current.subject}}}, new={{alias=kafka, DN={new.subject}}}")
    if not _flag(props, listener, ALLOW_SAN_CHANGES) and not current.subject_alt_names <= new.subject_alt_names:
        raise _refused(f"{_CONFIG_EXCEPTION}: Keystore SubjectAltNames do not match:  existing={{alias=kafka, "
                       f"SAN={_sans(current)}}}, new={{alias=kafka, SAN={_sans(new)}}}")
    if inter_broker:
        _validate_handshakes(current, new, listener)
    return new


def settings_changed(current: ListenerTls, props: Mapping[str, str], listener: str) -> bool:
    """Other store settings (not only a store file rewritten in place)."""
    return current.settings != _settings(props, listener)


def _refused(reason: str) -> ConfigError:
    return ConfigError(f"Validation of dynamic config update of SSLFactory failed: {reason}")


def _flag(props: Mapping[str, str], listener: str, key: str) -> bool:
    return (listener_prop(props, listener, key) or "false").strip().lower() == "true"


def _sans(tls: ListenerTls) -> str:
    return "[" + ", ".join(f"[{kind}, {value}]" for kind, value in sorted(tls.subject_alt_names)) + "]"


def _validate_handshakes(old: ListenerTls, new: ListenerTls, listener: str) -> None:
    """SslEngineValidator: the old stores' server against a client with the new ones, and the other way round,
    so that brokers part-way through a rotation still talk to each other. The client sides are made here, from
    the stores' settings, only when a rotation asks for them."""
    def client(tls: ListenerTls) -> ssl.SSLContext:
        return ssl_client_context({k: v for k, v in tls.settings if v is not None}, listener, check_hostname=False)

    for server_ctx, client_ctx in ((old.context, client(new)), (new.context, client(old))):
        _handshake(server_ctx, client_ctx)


def _handshake(server_ctx: ssl.SSLContext, client_ctx: ssl.SSLContext) -> None:
    """A TLS handshake in memory between the two contexts; ConfigError with the reason when it fails."""
    c_in, c_out, s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    client = client_ctx.wrap_bio(c_in, c_out, server_side=False)
    server = server_ctx.wrap_bio(s_in, s_out, server_side=True)
    done = {"client": False, "server": False}
    try:
        for _ in range(_HANDSHAKE_STEPS):
            for name, side in (("client", client), ("server", server)):
                if not done[name]:
                    try:
                        side.do_handshake()
                        done[name] = True
                    except ssl.SSLWantReadError:
                        pass
            s_in.write(c_out.read())
            c_in.write(s_out.read())
            if all(done.values()):
                return
    except ssl.SSLError as e:
        raise _refused(f"javax.net.ssl.SSLHandshakeException: {e.reason or e}") from None
    raise _refused("javax.net.ssl.SSLHandshakeException: the validation handshake did not complete")
