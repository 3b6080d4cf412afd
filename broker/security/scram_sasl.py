"""The SCRAM exchange (RFC 5802, RFC 7677) as Kafka's ScramSaslServer and ScramSaslClient run it.

Server: client-first `n,,n=<user>,r=<cnonce>[,ext=v]` → server-first `r=<cnonce><snonce>,s=<salt>,i=<n>`
→ client-final `c=biws,r=<nonce>,p=<proof>` → server-final `v=<signature>`. Kafka never sends `e=...`: a
failure is an exception (sasl.SaslException), and the broker answers SASL_AUTHENTICATION_FAILED.
Message grammar follows Kafka's ScramMessages regular expressions.
"""

from __future__ import annotations

import base64
import hmac
import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from broker.security.sasl import IllegalSaslStateException, SaslAuthenticationException, SaslException
from broker.security.scram import (
    ScramCredential,
    ScramMechanism,
    client_key,
    salted_password,
    secure_random_string,
    server_key,
)

# ScramMessages' character classes, ASCII only as Kafka's are.
_SASLNAME = r"(?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+"
_VALUE = r"[\x01-\x2B\x2D-\x7F]+"
_PRINTABLE = r"[\x21-\x2B\x2D-\x7E]+"
_B64 = r"(?:[a-zA-Z0-9/+]{4})*(?:[a-zA-Z0-9/+]{3}=|[a-zA-Z0-9/+]{2}==)?"
_EXTENSIONS = rf"(?:,[A-Za-z]+={_VALUE})*"
_CLIENT_FIRST = re.compile(
    rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,(?:m={_VALUE},)?"
    rf"(?P<bare>n=(?P<saslname>{_SASLNAME}),r=(?P<nonce>{_PRINTABLE})(?P<extensions>{_EXTENSIONS}))")
_SERVER_FIRST = re.compile(
    rf"(?:m={_VALUE},)?r=(?P<nonce>{_PRINTABLE}),s=(?P<salt>{_B64}),i=(?P<iterations>[0-9]+){_EXTENSIONS}")
_CLIENT_FINAL = re.compile(
    rf"(?P<without_proof>c=(?P<channel>{_B64}),r=(?P<nonce>{_PRINTABLE}){_EXTENSIONS}),p=(?P<proof>{_B64})")
_SERVER_FINAL = re.compile(rf"(?:e=(?P<error>{_VALUE})|v=(?P<signature>{_B64})){_EXTENSIONS}")

TOKEN_AUTH = "tokenauth"   # ScramLoginModule.TOKEN_AUTH_CONFIG, the one extension Kafka acts on


def escape_saslname(username: str) -> str:
    """ScramFormatter.saslName: `=` → `=3D`, `,` → `=2C` (order matters)."""
    return username.replace("=", "=3D").replace(",", "=2C")


def unescape_saslname(saslname: str) -> str:
    """ScramFormatter.username: the inverse; any other `=` sequence is invalid."""
    if re.search(r"=(?!2C|3D)", saslname):
        raise SaslException(f"Invalid username: {saslname}")
    return saslname.replace("=2C", ",").replace("=3D", "=")


def _xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b, strict=True))


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _parse_extensions(text: str) -> dict[str, str]:
    """`,k=v,k2=v2` (Utils.parseMap with "=" and ",")."""
    return dict(item.split("=", 1) for item in text.split(",") if item)


@dataclass(frozen=True)
class DelegationToken:
    """What the token cache answers for a tokenauth exchange: the owner is the authenticated principal."""

    owner: str
    credential: ScramCredential
    expiry_timestamp_ms: int


class _State(Enum):
    RECEIVE_CLIENT_FIRST_MESSAGE = "RECEIVE_CLIENT_FIRST_MESSAGE"
    RECEIVE_CLIENT_FINAL_MESSAGE = "RECEIVE_CLIENT_FINAL_MESSAGE"
    COMPLETE = "COMPLETE"
    FAILED = "FAILED"


class ScramSaslServer:
    """One connection's SCRAM server. Credentials come from `credentials(username, mechanism_name)`;
    `tokens(token_id)` serves `tokenauth=true` (None: delegation tokens are not supported)."""

    def __init__(self, mechanism: ScramMechanism,
                 credentials: Callable[[str, str], ScramCredential | None],
                 tokens: Callable[[str], DelegationToken | None] | None = None,
                 nonce_factory: Callable[[], str] = secure_random_string) -> None:
        self.mechanism = mechanism.mechanism_name
        self._mechanism = mechanism
        self._credentials = credentials
        self._tokens = tokens
        self._nonce_factory = nonce_factory
        self._state = _State.RECEIVE_CLIENT_FIRST_MESSAGE
        self._credential: ScramCredential | None = None
        self._client_first_bare = ""
        self._gs2_header = ""
        self._server_first = ""
        self._nonce = ""
        self._authorization_id = ""
        self.token_authenticated = False
        self.token_expiry_timestamp_ms: int | None = None

    def evaluate_response(self, response: bytes) -> bytes:
        """Take the client's token, answer the next one; raise SaslException on failure (then FAILED)."""
        try:
            if self._state is _State.RECEIVE_CLIENT_FIRST_MESSAGE:
                out = self._client_first(response.decode("utf-8", errors="replace"))
                self._state = _State.RECEIVE_CLIENT_FINAL_MESSAGE
                return out
            if self._state is _State.RECEIVE_CLIENT_FINAL_MESSAGE:
                out = self._client_final(response.decode("utf-8", errors="replace"))
                self._state = _State.COMPLETE
                return out
            raise IllegalSaslStateException(f"Unexpected challenge in Sasl server state {self._state.value}")
        except SaslException:
            self._credential = None   # clearCredentials(): nothing secret outlives a failure
            self._state = _State.FAILED
            raise

    def is_complete(self) -> bool:
        return self._state is _State.COMPLETE

    def authorization_id(self) -> str:
        """The authenticated user (or the token's owner); the principal is `User:<this>`."""
        if not self.is_complete():
            raise IllegalSaslStateException("Authentication exchange has not completed")
        return self._authorization_id

    def _client_first(self, message: str) -> bytes:
        m = _CLIENT_FIRST.fullmatch(message)
        if m is None:
            # Also what a `p=`/`y,` gs2 header gets: Kafka's grammar only admits `n,` (no channel binding).
            raise SaslException(f"Invalid SCRAM client first message format: {message}")
        username = unescape_saslname(m["saslname"])
        extensions = _parse_extensions(m["extensions"])
        credential = self._lookup(username, extensions.get(TOKEN_AUTH, "").lower() == "true")
        if credential is None:
            raise SaslException("Authentication failed: Invalid user credentials")
        authzid = unescape_saslname(m["authzid"]) if m["authzid"] else ""
        if authzid and authzid != username:
            raise SaslAuthenticationException(
                "Authentication failed: Client requested an authorization id that is different from username")
        if credential.iterations < self._mechanism.min_iterations:
            raise SaslException(f"Iterations {credential.iterations} is less than the minimum "
                                f"{self._mechanism.min_iterations} for {self.mechanism}")
        self._credential = credential
        self._gs2_header = message[:m.start("bare")]
        self._client_first_bare = m["bare"]
        self._nonce = m["nonce"] + self._nonce_factory()
        self._server_first = f"r={self._nonce},s={_b64(credential.salt)},i={credential.iterations}"
        return self._server_first.encode("ascii")

    def _lookup(self, username: str, token_auth: bool) -> ScramCredential | None:
        if not token_auth:
            self._authorization_id = username
            try:
                return self._credentials(username, self.mechanism)
            except Exception as e:   # a store failure must not read as a wrong password in the log
                raise SaslException("Authentication failed: Credentials could not be obtained") from e
        token = self._tokens(username) if self._tokens is not None else None
        if token is None:
            raise SaslException(f"Token Authentication failed: Invalid tokenId : {username}")
        self._authorization_id = token.owner
        self.token_authenticated = True
        self.token_expiry_timestamp_ms = token.expiry_timestamp_ms
        return token.credential

    def _client_final(self, message: str) -> bytes:
        m = _CLIENT_FINAL.fullmatch(message)
        if m is None:
            raise SaslException(f"Invalid SCRAM client final message format: {message}")
        # Kafka 3.8.1-3.9 (KAFKA-17635 / CVE-2024-56128) check endsWith, not equals: librdkafka before 2.6.1
        # sends its own nonce again in front of the server's (librdkafka#4895); Kafka 4 went back to equals.
        if not m["nonce"].endswith(self._nonce):
            raise SaslException("Invalid client nonce in the final client message.")
        if base64.b64decode(m["channel"]) != self._gs2_header.encode("ascii"):
            raise SaslException("Invalid channel binding in the final client message.")
        assert self._credential is not None   # set by the first message
        auth_message = f"{self._client_first_bare},{self._server_first},{m['without_proof']}".encode()
        client_signature = self._mechanism.hmac(self._credential.stored_key, auth_message)
        proof = base64.b64decode(m["proof"])
        if len(proof) != len(client_signature):
            raise SaslException("Invalid client credentials")
        computed_stored_key = self._mechanism.hash(_xor(proof, client_signature))
        if not hmac.compare_digest(computed_stored_key, self._credential.stored_key):
            raise SaslException("Invalid client credentials")
        signature = self._mechanism.hmac(self._credential.server_key, auth_message)
        self._credential = None
        return f"v={_b64(signature)}".encode("ascii")


class ScramSaslClient:
    """Kafka's ScramSaslClient, for tests and for our own tools: first(), then respond() twice."""

    def __init__(self, mechanism: ScramMechanism, username: str, password: str,
                 extensions: dict[str, str] | None = None,
                 nonce_factory: Callable[[], str] = secure_random_string) -> None:
        self._mechanism = mechanism
        self._username = username
        self._password = password
        self._extensions = extensions or {}
        self._client_nonce = nonce_factory()
        self._bare = ""
        self._server_key = b""
        self._auth_message = b""
        self.complete = False

    def first(self) -> bytes:
        ext = "".join(f",{k}={v}" for k, v in self._extensions.items())
        self._bare = f"n={escape_saslname(self._username)},r={self._client_nonce}{ext}"
        return f"n,,{self._bare}".encode()

    def respond(self, challenge: bytes) -> bytes:
        """Answer server-first with client-final; check server-final (returns b"")."""
        text = challenge.decode("utf-8", errors="replace")
        if not self._auth_message:
            return self._client_final(text)
        m = _SERVER_FINAL.fullmatch(text)
        if m is None:
            raise SaslException(f"Invalid SCRAM server final message format: {text}")
        if m["error"] is not None:
            raise SaslException(f"Sasl authentication using {self._mechanism.mechanism_name} "
                                f"failed with error: {m['error']}")
        expected = self._mechanism.hmac(self._server_key, self._auth_message)
        if not hmac.compare_digest(base64.b64decode(m["signature"]), expected):
            raise SaslException("Invalid server signature in server final message")
        self.complete = True
        return b""

    def _client_final(self, server_first: str) -> bytes:
        m = _SERVER_FIRST.fullmatch(server_first)
        if m is None:
            raise SaslException(f"Invalid SCRAM server first message format: {server_first}")
        if not m["nonce"].startswith(self._client_nonce):
            raise SaslException("Invalid server nonce: does not start with client nonce")
        iterations = int(m["iterations"])
        if iterations < self._mechanism.min_iterations:
            raise SaslException(f"Requested iterations {iterations} is less than the minimum "
                                f"{self._mechanism.min_iterations} for {self._mechanism.mechanism_name}")
        salted = salted_password(self._mechanism, self._password, base64.b64decode(m["salt"]), iterations)
        without_proof = f"c={_b64(b'n,,')},r={m['nonce']}"
        self._auth_message = f"{self._bare},{server_first},{without_proof}".encode()
        ck = client_key(self._mechanism, salted)
        signature = self._mechanism.hmac(self._mechanism.hash(ck), self._auth_message)
        self._server_key = server_key(self._mechanism, salted)
        return f"{without_proof},p={_b64(_xor(ck, signature))}".encode("ascii")
