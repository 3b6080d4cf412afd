"""TLS and basic auth for the HTTP endpoints, in the Prometheus exporter-toolkit web-config format.

The same YAML file (`--web.config.file`) that Prometheus' own exporters read::

    tls_server_config:
      cert_file: server.crt            # relative paths are read from the file's directory, as the toolkit does
      key_file: server.key
      client_ca_file: ca.pem           # optional; with it client_auth_type defaults to RequireAndVerifyClientCert
      client_auth_type: RequireAndVerifyClientCert
      min_version: TLS12
    basic_auth_users:
      prometheus: $2b$12$...           # bcrypt hash (htpasswd -nBC 10 "" | tr -d ':\\n', or python -m bcrypt)

`load(path)` parses and validates it (a `WebConfigError` names the key at fault); `WebConfig.ssl_context()`
builds the server's `ssl.SSLContext`; `WebConfig.check(authorization_header)` is the basic-auth rule, and
`UNAUTHORIZED` is the 401 answer (with `WWW-Authenticate: Basic`) both servers in `exporter.http` send.

Not done, and refused rather than ignored where ignoring would weaken security: `client_allowed_sans`,
`RequireAnyClientCert` (Python's ssl cannot accept a client certificate without verifying it), inline
`cert`/`key`, `http_server_config.headers`. Go's `cipher_suites`, `curve_preferences` and
`prefer_server_cipher_suites` are read and ignored with a warning (OpenSSL's defaults apply); `http2` is ignored
(HTTP/1.1 is served).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging
import re
import ssl
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import bcrypt
import yaml

log = logging.getLogger(__name__)

UNAUTHORIZED = (401, b"Unauthorized\n", "text/plain; charset=utf-8")
UNAUTHORIZED_HEADERS = (("WWW-Authenticate", "Basic"),)

_TLS_VERSIONS = {"TLS10": ssl.TLSVersion.TLSv1, "TLS11": ssl.TLSVersion.TLSv1_1,
                 "TLS12": ssl.TLSVersion.TLSv1_2, "TLS13": ssl.TLSVersion.TLSv1_3}
_CLIENT_AUTH = {"NoClientCert": ssl.CERT_NONE, "RequestClientCert": ssl.CERT_NONE,
                "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL, "RequireAndVerifyClientCert": ssl.CERT_REQUIRED}
_TLS_KEYS = {"cert_file", "key_file", "client_ca_file", "client_auth_type", "min_version", "max_version",
             "cipher_suites", "curve_preferences", "prefer_server_cipher_suites", "client_allowed_sans", "cert",
             "key"}
_IGNORED_TLS = ("cipher_suites", "curve_preferences", "prefer_server_cipher_suites")
_CACHE_MAX = 100
# Checked when the user is unknown, so a wrong user name costs the same time as a wrong password.
_DUMMY_HASH = b"$2b$10$ZWmerMkf2fjWvvv8iVjs4.DONl5W5lbuivdmLGS72Sj5S/fN7Ul1a"
_BCRYPT = re.compile(r"\$2[aby]\$(0[4-9]|[12][0-9]|3[01])\$[./A-Za-z0-9]{53}")


class WebConfigError(ValueError):
    """A web config file that cannot be used; the message names the file and the key."""


@dataclass
class TLSServerConfig:
    cert_file: Path
    key_file: Path
    client_ca_file: Path | None = None
    client_auth_type: str = "NoClientCert"
    min_version: str = "TLS12"
    max_version: str | None = None

    def ssl_context(self) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = _TLS_VERSIONS[self.min_version]
        if self.max_version is not None:
            ctx.maximum_version = _TLS_VERSIONS[self.max_version]
        ctx.load_cert_chain(str(self.cert_file), str(self.key_file))
        ctx.verify_mode = _CLIENT_AUTH[self.client_auth_type]
        if self.client_ca_file is not None and ctx.verify_mode != ssl.CERT_NONE:
            ctx.load_verify_locations(cafile=str(self.client_ca_file))
        return ctx


@dataclass
class WebConfig:
    tls: TLSServerConfig | None = None
    users: dict[str, bytes] = field(default_factory=dict)   # user -> bcrypt hash
    _ok: set[tuple[str, bytes, bytes]] = field(default_factory=set, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def ssl_context(self) -> ssl.SSLContext | None:
        return self.tls.ssl_context() if self.tls is not None else None

    def check(self, authorization: str | None) -> bool:
        """True when the request may be served: no users configured, or right Basic credentials."""
        if not self.users:
            return True
        creds = _basic_credentials(authorization)
        if creds is None:
            return False
        user, password = creds
        hashed = self.users.get(user)
        # Successful checks are cached by (user, stored hash, password digest): bcrypt is slow by design and
        # Prometheus scrapes every few seconds (the exporter-toolkit caches the same way).
        key = (user, hashed or b"", hashlib.sha256(password.encode()).digest())
        with self._lock:
            if hashed is not None and key in self._ok:
                return True
        try:
            ok = bcrypt.checkpw(password.encode(), hashed or _DUMMY_HASH) and hashed is not None
        except ValueError:
            ok = False
        if ok:
            with self._lock:
                if len(self._ok) >= _CACHE_MAX:
                    self._ok.clear()
                self._ok.add(key)
        return ok


def _basic_credentials(header: str | None) -> tuple[str, str] | None:
    if not header:
        return None
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(token.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    user, sep, password = decoded.partition(":")
    return (user, password) if sep else None


def authorized(config: WebConfig | None, authorization: str | None) -> bool:
    return config is None or config.check(authorization)


def load(path: str | Path) -> WebConfig:
    """Read and validate a web config file; an empty file means no TLS and no auth (as the toolkit reads it)."""
    p = Path(path)
    try:
        doc = yaml.safe_load(p.read_text())
    except OSError as e:
        raise WebConfigError(f"web config {p}: cannot read: {e}") from None
    except yaml.YAMLError as e:
        raise WebConfigError(f"web config {p}: not YAML: {e}") from None
    return parse(doc, base_dir=p.parent, source=str(p))


def parse(doc: Any, base_dir: Path, source: str = "web config") -> WebConfig:
    if doc is None:
        return WebConfig()
    if not isinstance(doc, dict):
        raise WebConfigError(f"{source}: expected a mapping at the top level")
    for key in doc:
        if key not in ("tls_server_config", "basic_auth_users", "http_server_config"):
            raise WebConfigError(f"{source}: unknown key {key!r}")
    _http_server_config(doc.get("http_server_config"), source)
    tls = _tls(doc.get("tls_server_config"), base_dir, source)
    users = _users(doc.get("basic_auth_users"), source)
    return WebConfig(tls=tls, users=users)


def _http_server_config(section: Any, source: str) -> None:
    if section is None:
        return
    if not isinstance(section, dict):
        raise WebConfigError(f"{source}: http_server_config must be a mapping")
    for key in section:
        if key == "http2":
            continue
        if key == "headers":
            raise WebConfigError(f"{source}: http_server_config.headers is not supported")
        raise WebConfigError(f"{source}: unknown key 'http_server_config.{key}'")


def _tls(section: Any, base_dir: Path, source: str) -> TLSServerConfig | None:
    if section is None:
        return None
    k = "tls_server_config"
    if not isinstance(section, dict):
        raise WebConfigError(f"{source}: {k} must be a mapping")
    for key in section:
        if key not in _TLS_KEYS:
            raise WebConfigError(f"{source}: unknown key '{k}.{key}'")
    for key in ("client_allowed_sans", "cert", "key"):
        if section.get(key):
            raise WebConfigError(f"{source}: {k}.{key} is not supported (use cert_file/key_file, client_ca_file)")
    for key in _IGNORED_TLS:
        if section.get(key) is not None:
            log.warning("%s: %s.%s is ignored (OpenSSL's defaults apply)", source, k, key)

    def path(key: str, required: bool) -> Path | None:
        value = section.get(key)
        if value in (None, ""):
            if required:
                raise WebConfigError(f"{source}: {k}.{key} is required")
            return None
        if not isinstance(value, str):
            raise WebConfigError(f"{source}: {k}.{key} must be a path")
        f = Path(value) if Path(value).is_absolute() else base_dir / value
        if not f.is_file():
            raise WebConfigError(f"{source}: {k}.{key}: no such file {f}")
        return f

    cert, key_file, ca = path("cert_file", True), path("key_file", True), path("client_ca_file", False)
    assert cert is not None and key_file is not None
    auth = section.get("client_auth_type") or ("RequireAndVerifyClientCert" if ca else "NoClientCert")
    if auth not in _CLIENT_AUTH:
        supported = ", ".join(_CLIENT_AUTH)
        raise WebConfigError(f"{source}: {k}.client_auth_type {auth!r} is not supported (one of {supported})")
    if auth in ("VerifyClientCertIfGiven", "RequireAndVerifyClientCert") and ca is None:
        raise WebConfigError(f"{source}: {k}.client_ca_file is required with client_auth_type {auth}")
    versions = {}
    for key, default in (("min_version", "TLS12"), ("max_version", None)):
        v = section.get(key) or default
        if v is not None and v not in _TLS_VERSIONS:
            raise WebConfigError(f"{source}: {k}.{key} {v!r} is not one of {', '.join(_TLS_VERSIONS)}")
        versions[key] = v
    cfg = TLSServerConfig(cert, key_file, ca, auth, versions["min_version"] or "TLS12", versions["max_version"])
    try:
        cfg.ssl_context()
    except (ssl.SSLError, OSError) as e:
        raise WebConfigError(f"{source}: {k}: cannot load cert_file/key_file/client_ca_file: {e}") from None
    return cfg


def _users(section: Any, source: str) -> dict[str, bytes]:
    if section is None:
        return {}
    k = "basic_auth_users"
    if not isinstance(section, dict):
        raise WebConfigError(f"{source}: {k} must be a mapping of user name to bcrypt hash")
    users = {}
    for user, hashed in section.items():
        if not isinstance(user, str) or not user or ":" in user:
            raise WebConfigError(f"{source}: {k}: bad user name {user!r}")
        if not isinstance(hashed, str) or not _is_bcrypt(hashed):
            raise WebConfigError(f"{source}: {k}.{user}: not a bcrypt hash (expected $2a$/$2b$/$2y$..., 60 chars)")
        users[user] = hashed.encode()
    return users


def _is_bcrypt(h: str) -> bool:
    return _BCRYPT.fullmatch(h) is not None
