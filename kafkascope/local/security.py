"""The security kit of a local cluster (issue 15): a CA and certificates made with the openssl CLI, the
server.properties entries of a SASL_SSL cluster as Kafka 3.9 takes them, and an admin client.properties in
Kafka's own (Java) property names, so kafka-*.sh tools and ours read the same file.

    kit = SecurityKit.load_or_create(data_dir / "security")
    kit.server_properties(9094)          # listeners, JAAS, PEM key/trust stores, AclAuthorizer, super.users
    kit.write_client_properties()        # security/client.properties (SCRAM-SHA-512, user admin)
    kit.create_admin_scram(ports)        # AlterUserScramCredentials (KIP-554) once the brokers run

The same entries start our brokers and Apache Kafka's (kafka.Kafka, ZooKeeper mode). The only listener is
SASL_SSL: the launcher's readiness checks (a TCP connect, then Metadata) authenticate with the admin's PLAIN
login (`client_security()`), so no PLAINTEXT listener is kept.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import ssl
import subprocess
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from broker.network.client_security import ClientSecurity
from broker.security import scram
from common import jaas
from kafkascope.local import broker_request

MODES = ("sasl_ssl",)
LISTENER = "SASL_SSL"
ADMIN = "admin"
CLIENT_MECHANISM = "SCRAM-SHA-512"     # what client.properties uses: the credential created the Kafka way
INTER_BROKER_MECHANISM = "PLAIN"       # from the JAAS file, so brokers can talk before any SCRAM user exists
PLAIN_LOGIN, SCRAM_LOGIN = jaas.PLAIN_LOGIN_MODULE, jaas.SCRAM_LOGIN_MODULE
AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"  # the ZooKeeper-mode authorizer of Kafka 3.9
SCRAM_ITERATIONS = 8192
METADATA, ALTER_USER_SCRAM_CREDENTIALS = 3, 51
NOT_CONTROLLER = 41
KIT_FILE = "kit.json"
CLIENT_PROPERTIES = "client.properties"


class SecurityKitError(RuntimeError):
    """openssl missing or failing, or a kit directory that cannot be read."""


def _openssl(*args: str, cwd: Path) -> None:
    try:
        subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)
    except FileNotFoundError:
        raise SecurityKitError("the openssl CLI is needed to make certificates (Debian package openssl)") from None
    except subprocess.CalledProcessError as e:
        raise SecurityKitError(f"openssl {args[0]} failed: {e.stderr.decode(errors='replace').strip()}") from None


def cert_files(d: Path) -> dict[str, Path]:
    """Where make_certs() puts each file. `server` is Kafka's PEM key store: PKCS#8 key + certificate chain."""
    return {"ca": d / "ca.pem", "server": d / "server.pem", "server_cert": d / "server.crt",
            "server_key": d / "server.key", "client_cert": d / "client.crt", "client_key": d / "client.key"}


def make_certs(d: Path, days: int = 2) -> dict[str, Path]:
    """A CA, a server certificate for 127.0.0.1/localhost with its key (PKCS#8, unencrypted: Kafka's PEM key store
    reads it without ssl.key.password, KIP-651) and chain in one PEM, and a client certificate (CN=client1)."""
    d.mkdir(parents=True, exist_ok=True)
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", str(days), "-subj", "/CN=kafkascope-test-ca",
             "-keyout", "ca.key", "-out", "ca.pem", cwd=d)
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for name, subj in (("server", "/CN=localhost"), ("client", "/CN=client1/OU=test")):
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", subj, "-keyout", f"{name}.key",
                 "-out", f"{name}.csr", cwd=d)
        # OpenSSL 3 writes PKCS#8 already; older ones write PKCS#1, which Kafka's PEM key store refuses.
        _openssl("pkcs8", "-topk8", "-nocrypt", "-in", f"{name}.key", "-out", f"{name}.p8", cwd=d)
        os.replace(d / f"{name}.p8", d / f"{name}.key")
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                 "-days", str(days), "-extfile", "san.ext", "-out", f"{name}.crt", cwd=d)
    files = cert_files(d)
    files["server"].write_text(files["server_key"].read_text() + files["server_cert"].read_text()
                               + files["ca"].read_text())
    for key in ("ca.key", "server.key", "client.key", "server.pem"):
        os.chmod(d / key, 0o600)
    return files


def certs_valid_for(d: Path, seconds: int) -> bool:
    """Whether every certificate of make_certs(d) exists and stays valid for `seconds` more (openssl -checkend)."""
    files = cert_files(d)
    if not all(p.is_file() for p in files.values()):
        return False
    for cert in (files["ca"], files["server_cert"], files["client_cert"]):
        res = subprocess.run(["openssl", "x509", "-checkend", str(seconds), "-noout", "-in", str(cert)],
                             capture_output=True, timeout=30)
        if res.returncode != 0:
            return False
    return True


def jaas_login(mechanism: str, user: str, password: str) -> str:
    """A client's `sasl.jaas.config` (Kafka's JaasConfig syntax) for PLAIN or SCRAM-SHA-*."""
    module = PLAIN_LOGIN if mechanism == "PLAIN" else SCRAM_LOGIN
    return f'{module} required username="{user}" password="{password}";'


def client_properties(ca: Path, user: str, password: str, mechanism: str = CLIENT_MECHANISM) -> dict[str, str]:
    """A client.properties in Kafka's Java names (what kafka-topics.sh --command-config reads)."""
    return {
        "security.protocol": LISTENER,
        "sasl.mechanism": mechanism,
        "sasl.jaas.config": jaas_login(mechanism, user, password),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(ca),
    }


def write_properties(path: Path, props: dict[str, str], mode: int = 0o600) -> Path:
    """A .properties file, one `key=value` a line; owner-only by default since these hold passwords."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    os.chmod(path, mode)
    return path


@dataclass
class SecurityKit:
    """Certificates and credentials of one secured cluster, kept in `directory` (kit.json holds the passwords).

    plain_users are extra PLAIN users of the brokers' JAAS entry (`user_<name>="<password>"`), as Kafka's
    PlainLoginModule takes them; the admin is always one, and is the super user and the inter-broker login."""

    directory: Path
    admin_password: str
    plain_users: dict[str, str] = field(default_factory=dict)
    # What usage() names; a KRaft cluster's launcher sets kraft_security.AUTHORIZER (not kept in kit.json).
    authorizer: str = AUTHORIZER

    @classmethod
    def load(cls, directory: Path) -> SecurityKit:
        """The kit an earlier load_or_create() left in `directory`, as it is (nothing is renewed or written)."""
        directory = Path(directory).resolve()
        kit_path = directory / KIT_FILE
        try:
            saved = json.loads(kit_path.read_text())
            return cls(directory, saved["admin_password"], dict(saved.get("plain_users", {})))
        except OSError as e:
            raise SecurityKitError(f"cannot read {kit_path}: {e.strerror}") from None
        except (ValueError, KeyError, TypeError) as e:
            raise SecurityKitError(f"{kit_path} is not a security kit: {e}") from None

    @classmethod
    def load_or_create(cls, directory: Path, days: int = 365,
                       plain_users: dict[str, str] | None = None) -> SecurityKit:
        """The kit in `directory`: kept from an earlier run (same passwords, certificates valid for another day),
        else made anew."""
        directory = Path(directory).resolve()
        directory.mkdir(parents=True, exist_ok=True)
        kit_path = directory / KIT_FILE
        kit = cls.load(directory) if kit_path.is_file() else cls(directory, secrets.token_urlsafe(16))
        if plain_users:
            kit.plain_users.update(plain_users)
        kit_path.write_text(json.dumps({"admin_password": kit.admin_password, "plain_users": kit.plain_users}))
        os.chmod(kit_path, 0o600)
        if not certs_valid_for(kit.cert_dir, 86400):
            make_certs(kit.cert_dir, days)
        return kit

    @property
    def cert_dir(self) -> Path:
        return self.directory / "certs"

    @property
    def certs(self) -> dict[str, Path]:
        return cert_files(self.cert_dir)

    @property
    def client_properties_path(self) -> Path:
        return self.directory / CLIENT_PROPERTIES

    def server_properties(self, sasl_ssl_port: int, plaintext_port: int | None = None) -> dict[str, str]:
        """The entries of issue 15's example for one broker. A PLAINTEXT listener only when plaintext_port is
        given (the launcher gives none: its readiness checks authenticate, see client_security())."""
        listeners = {LISTENER: sasl_ssl_port, **({"PLAINTEXT": plaintext_port} if plaintext_port else {})}
        return {
            "listeners": ",".join(f"{n}://127.0.0.1:{p}" for n, p in listeners.items()),
            "listener.security.protocol.map": ",".join(f"{n}:{n}" for n in listeners),
            "inter.broker.listener.name": LISTENER,
            **self.sasl_ssl_acl_properties(AUTHORIZER),
        }

    def plain_jaas(self) -> str:
        """The PlainLoginModule entry: the login a broker uses as a client (username/password) and the PLAIN users
        it accepts (user_<name>)."""
        users = {ADMIN: self.admin_password, **self.plain_users}
        return (f'{PLAIN_LOGIN} required username="{ADMIN}" password="{self.admin_password}" '
                + " ".join(f'user_{u}="{p}"' for u, p in users.items()) + ";")

    def sasl_ssl_acl_properties(self, authorizer: str) -> dict[str, str]:
        """The entries every broker of the kit has, ZooKeeper mode or KRaft: SASL mechanisms and JAAS on the
        SASL_SSL listener, PEM stores, the authorizer with `admin` as super user and no ACL meaning no access."""
        return {
            "sasl.mechanism.inter.broker.protocol": INTER_BROKER_MECHANISM,
            "sasl.enabled.mechanisms": f"PLAIN,{CLIENT_MECHANISM}",
            "listener.name.sasl_ssl.plain.sasl.jaas.config": self.plain_jaas(),
            f"listener.name.sasl_ssl.{CLIENT_MECHANISM.lower()}.sasl.jaas.config": f"{SCRAM_LOGIN} required;",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(self.certs["server"]),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(self.certs["ca"]),
            "authorizer.class.name": authorizer,
            "super.users": f"User:{ADMIN}",
            "allow.everyone.if.no.acl.found": "false",
        }

    def client_properties(self, user: str = ADMIN, password: str | None = None,
                          mechanism: str = CLIENT_MECHANISM) -> dict[str, str]:
        return client_properties(self.certs["ca"], user, self.admin_password if password is None else password,
                                 mechanism)

    def write_client_properties(self, path: Path | None = None, user: str = ADMIN, password: str | None = None,
                                mechanism: str = CLIENT_MECHANISM) -> Path:
        return write_properties(path or self.client_properties_path,
                                self.client_properties(user, password, mechanism))

    def client_security(self, mechanism: str = INTER_BROKER_MECHANISM, user: str = ADMIN,
                        password: str | None = None) -> ClientSecurity:
        """How the launcher's own checks connect: TLS trusting the kit's CA, SASL as the admin."""
        ctx = ssl.create_default_context(cafile=str(self.certs["ca"]))
        return ClientSecurity(LISTENER, LISTENER, ctx, mechanism, user,
                              self.admin_password if password is None else password)

    def create_admin_scram(self, ports: list[int], timeout_s: float = 60.0) -> None:
        """Give the admin its SCRAM-SHA-512 credential (the PLAIN password) with AlterUserScramCredentials (KIP-554),
        then wait until the admin's SCRAM login works on every broker (each reads /config/users/admin from
        ZooKeeper after the change notification)."""
        try:
            asyncio.run(asyncio.wait_for(self._create_admin_scram(ports), timeout_s))
        except TimeoutError:
            raise SecurityKitError(f"the admin's {CLIENT_MECHANISM} credential was not usable on every broker "
                                   f"(ports {ports}) after {timeout_s:.0f} s") from None

    async def _create_admin_scram(self, ports: list[int]) -> None:
        mech = scram.SCRAM_MECHANISMS[CLIENT_MECHANISM]
        salt = secrets.token_bytes(32)
        upsertion = {"name": ADMIN, "mechanism": mech.type, "iterations": SCRAM_ITERATIONS, "salt": salt,
                     "salted_password": scram.salted_password(mech, self.admin_password, salt, SCRAM_ITERATIONS)}
        plain_login = self.client_security()
        while True:
            # Kafka in ZooKeeper mode takes the request only on the active controller (NOT_CONTROLLER elsewhere,
            # as its AdminClient knows); our brokers take it anywhere, so asking the controller suits both.
            metadata = await _retrying(partial(_request, ports[0], plain_login, METADATA, 1, {"topics": []}))
            port = next((b.port for b in metadata.brokers if b.node_id == metadata.controller_id), None)
            if port is None:
                await asyncio.sleep(0.1)
                continue
            response = await _retrying(partial(_request, port, plain_login, ALTER_USER_SCRAM_CREDENTIALS, 0,
                                               {"deletions": [], "upsertions": [upsertion]}))
            errors = [(int(r.error_code), r.error_message or "") for r in response.results if r.error_code != 0]
            if errors and errors[0][0] == NOT_CONTROLLER:
                await asyncio.sleep(0.1)
                continue
            if errors:
                raise SecurityKitError(f"AlterUserScramCredentials for {ADMIN}: error {errors[0][0]} {errors[0][1]}"
                                       .rstrip())
            break
        await self._await_scram_login(ports)

    def wait_admin_scram(self, ports: list[int], timeout_s: float = 60.0) -> None:
        """Wait until the admin's SCRAM-SHA-512 login works on every broker (a KRaft cluster's credential comes
        from kafka-storage format --add-scram, KIP-900; each broker has it once it replays the metadata log)."""
        try:
            asyncio.run(asyncio.wait_for(self._await_scram_login(ports), timeout_s))
        except TimeoutError:
            raise SecurityKitError(f"the admin's {CLIENT_MECHANISM} login did not work on every broker "
                                   f"(ports {ports}) after {timeout_s:.0f} s") from None

    async def _await_scram_login(self, ports: list[int]) -> None:
        scram_login = self.client_security(CLIENT_MECHANISM)
        for port in ports:
            await _retrying(partial(_request, port, scram_login, METADATA, 1, {"topics": []}))

    def usage(self, bootstrap: str) -> str:
        """What `kafkascope cluster up --security sasl_ssl` prints: where things are and how to connect."""
        cp = self.client_properties_path
        return "\n".join([
            f"security: {LISTENER} (PLAIN, {CLIENT_MECHANISM}), {self.authorizer}, super user User:{ADMIN}; "
            f"certificates in {self.cert_dir}",
            f"client properties: {cp}",
            f"  kafkascope topics --bootstrap-server {bootstrap} --command-config {cp} --list",
            f"  kafka-topics.sh --bootstrap-server {bootstrap} --command-config {cp} --list",
            f"  kafkascope acls --bootstrap-server {bootstrap} --command-config {cp} --add "
            "--allow-principal User:alice --producer --topic orders",
        ])


async def _retrying(call: Callable[[], Awaitable[Any]]) -> Any:
    """`call()` until it does not fail on the connection (a broker still starting, a login not yet known); the
    caller bounds the time."""
    while True:
        try:
            return await call()
        except (OSError, EOFError, TimeoutError):
            await asyncio.sleep(0.1)


async def _request(port: int, security: ClientSecurity, api_key: int, version: int, body: dict,
                   timeout_s: float = 5.0) -> Any:
    return await broker_request.request("127.0.0.1", port, security, api_key, version, body, timeout_s,
                                        "kafkascope-security")
