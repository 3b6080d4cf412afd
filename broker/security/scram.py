"""SCRAM credentials as Kafka keeps them (ScramMechanism, ScramFormatter, ScramCredentialUtils).

A credential is (salt, stored_key, server_key, iterations); the password itself is never stored. Kafka
writes it as `salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=N` inside the user's config znode
`/config/users/<sanitized name>` = `{"version":1,"config":{"SCRAM-SHA-512":"salt=..."}}`.
The SASL exchange itself is in scram_sasl.py.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from broker.config_entity import sanitize
from broker.controller.zk_paths import decode_entity_config, encode_entity_config

DEFAULT_ITERATIONS = 4096   # ScramFormatter / kafka-configs default
MAX_ITERATIONS = 16384      # the broker's bound for AlterUserScramCredentials

# Error codes AlterUserScramCredentials / DescribeUserScramCredentials answer.
RESOURCE_NOT_FOUND = 91
DUPLICATE_RESOURCE = 92
UNACCEPTABLE_CREDENTIAL = 93
UNSUPPORTED_SASL_MECHANISM = 33


@dataclass(frozen=True)
class ScramMechanism:
    """One SCRAM mechanism: its SASL name, hashlib name, Kafka's minimum iterations and wire type byte."""

    mechanism_name: str
    hash_name: str
    min_iterations: int
    type: int   # ScramMechanism.type() in DescribeUserScramCredentials (UNKNOWN is 0)

    def hash(self, data: bytes) -> bytes:
        return hashlib.new(self.hash_name, data).digest()

    def hmac(self, key: bytes, data: bytes) -> bytes:
        return hmac.new(key, data, self.hash_name).digest()

    def hi(self, password: bytes, salt: bytes, iterations: int) -> bytes:
        """RFC 5802 Hi(): PBKDF2 with this HMAC and the hash's output length."""
        return hashlib.pbkdf2_hmac(self.hash_name, password, salt, iterations)


SCRAM_SHA_256 = ScramMechanism("SCRAM-SHA-256", "sha256", 4096, 1)
SCRAM_SHA_512 = ScramMechanism("SCRAM-SHA-512", "sha512", 4096, 2)
SCRAM_MECHANISMS: dict[str, ScramMechanism] = {m.mechanism_name: m for m in (SCRAM_SHA_256, SCRAM_SHA_512)}


def mechanism_for(name: str) -> ScramMechanism | None:
    """ScramMechanism.forMechanismName: None for a name Kafka does not know."""
    return SCRAM_MECHANISMS.get(name)


def mechanism_for_type(type_code: int) -> ScramMechanism | None:
    """ScramMechanism.fromType (the byte AlterUserScramCredentials carries)."""
    return next((m for m in SCRAM_MECHANISMS.values() if m.type == type_code), None)


@dataclass(frozen=True)
class ScramCredential:
    """org.apache.kafka.common.security.scram.ScramCredential."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def normalize(password: str) -> bytes:
    """ScramFormatter.normalize: UTF-8 bytes. Kafka applies no SASLprep, so neither do we."""
    return password.encode("utf-8")


def secure_random_string(randbits: Callable[[int], int] = secrets.randbits) -> str:
    """ScramFormatter.secureRandomString: a 130-bit random number in base 36 (nonces and salts)."""
    n = randbits(130)
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if n == 0:
            return out


def salted_password(mechanism: ScramMechanism, password: str, salt: bytes, iterations: int) -> bytes:
    return mechanism.hi(normalize(password), salt, iterations)


def client_key(mechanism: ScramMechanism, salted: bytes) -> bytes:
    return mechanism.hmac(salted, b"Client Key")


def server_key(mechanism: ScramMechanism, salted: bytes) -> bytes:
    return mechanism.hmac(salted, b"Server Key")


def credential_from_salted_password(mechanism: ScramMechanism, salt: bytes, salted: bytes,
                                    iterations: int) -> ScramCredential:
    """What the broker stores for an AlterUserScramCredentials upsertion (the client sends salt and
    SaltedPassword, never the password)."""
    stored = mechanism.hash(client_key(mechanism, salted))
    return ScramCredential(salt, stored, server_key(mechanism, salted), iterations)


def generate_credential(mechanism: ScramMechanism, password: str, iterations: int = DEFAULT_ITERATIONS,
                        salt: bytes | None = None) -> ScramCredential:
    """ScramFormatter.generateCredential: a fresh salt (Kafka's is a random base-36 string's bytes)."""
    if salt is None:
        salt = secure_random_string().encode("ascii")
    return credential_from_salted_password(
        mechanism, salt, salted_password(mechanism, password, salt, iterations), iterations)


# ---------------------------------------------------------------- ScramCredentialUtils string format

def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def credential_to_string(credential: ScramCredential) -> str:
    """ScramCredentialUtils.credentialToString."""
    return (f"salt={_b64(credential.salt)},stored_key={_b64(credential.stored_key)},"
            f"server_key={_b64(credential.server_key)},iterations={credential.iterations}")


def credential_from_string(text: str) -> ScramCredential:
    """ScramCredentialUtils.credentialFromString: exactly the four keys, else "Credentials not valid"."""
    props: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep:
            raise ValueError(f"Credentials not valid: {text}")
        props[key] = value
    if set(props) != {"salt", "stored_key", "server_key", "iterations"}:
        raise ValueError(f"Credentials not valid: {text}")
    try:
        return ScramCredential(
            base64.b64decode(props["salt"], validate=True),
            base64.b64decode(props["stored_key"], validate=True),
            base64.b64decode(props["server_key"], validate=True),
            int(props["iterations"]))
    except ValueError as e:
        raise ValueError(f"Credentials not valid: {text}") from e


# ---------------------------------------------------------------- ZooKeeper user config (/config/users/<user>)

def user_config_path(user: str) -> str:
    return f"/config/users/{sanitize(user)}"


def credentials_from_user_config(data: bytes) -> dict[str, ScramCredential]:
    """The SCRAM credentials in a /config/users znode; other keys (quotas) are left out."""
    return {name: credential_from_string(value) for name, value in decode_entity_config(data).items()
            if name in SCRAM_MECHANISMS}


def with_credential(data: bytes | None, mechanism: ScramMechanism,
                    credential: ScramCredential | None) -> bytes:
    """The user's znode data after setting (or, with None, deleting) one mechanism's credential."""
    return encode_entity_config(config_with_credential(decode_entity_config(data), mechanism, credential))


def config_with_credential(config: Mapping[str, str], mechanism: ScramMechanism,
                           credential: ScramCredential | None) -> dict[str, str]:
    """A user's entity config after setting (or, with None, deleting) one mechanism's credential."""
    out = dict(config)
    if credential is None:
        out.pop(mechanism.mechanism_name, None)
    else:
        out[mechanism.mechanism_name] = credential_to_string(credential)
    return out


# ---------------------------------------------------------------- kafka-configs --add-config 'SCRAM-SHA-512=[...]'

def parse_scram_config_value(value: str) -> tuple[int, str]:
    """ConfigCommand's `[iterations=8192,password=secret]` (or a bare password): (iterations, password).
    The password is everything after `password=` up to the closing bracket, so it may contain commas."""
    if not (value.startswith("[") and value.endswith("]")):
        return DEFAULT_ITERATIONS, value
    body = value[1:-1]
    iterations = DEFAULT_ITERATIONS
    while body and not body.startswith("password="):
        item, _, body = body.partition(",")
        key, _, v = item.partition("=")
        if key != "iterations":
            raise ValueError(f"Invalid credential property {key}")
        iterations = int(v)
    if not body.startswith("password="):
        raise ValueError("Password must be specified for SCRAM credential")
    return iterations, body[len("password="):]


# ---------------------------------------------------------------- AlterUserScramCredentials validation

@dataclass(frozen=True)
class Alteration:
    """One deletion (salted_password None) or upsertion from AlterUserScramCredentialsRequest."""

    user: str
    mechanism_type: int
    iterations: int = 0
    salt: bytes = b""
    salted_password: bytes | None = None


def validate_alterations(alterations: list[Alteration],
                         exists: Callable[[str, ScramMechanism], bool]) -> dict[str, tuple[int, str | None]]:
    """Per user: (error code, message) as the broker answers; code 0 means apply the user's alterations.
    A user with one (user, mechanism) pair named twice fails whole (DUPLICATE_RESOURCE), as Kafka does;
    a user may alter several mechanisms in one request."""
    seen: dict[tuple[str, int], int] = {}
    for a in alterations:
        seen[a.user, a.mechanism_type] = seen.get((a.user, a.mechanism_type), 0) + 1
    results: dict[str, tuple[int, str | None]] = {}
    for a in alterations:
        if a.user in results and results[a.user][0] != 0:
            continue
        results[a.user] = _validate_one(a, seen[a.user, a.mechanism_type], exists)
    return results


def _validate_one(a: Alteration, count: int,
                  exists: Callable[[str, ScramMechanism], bool]) -> tuple[int, str | None]:
    if not a.user:
        return UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if count > 1:
        return DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request"
    mechanism = mechanism_for_type(a.mechanism_type)
    if mechanism is None:
        return UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    if a.salted_password is None:
        if not exists(a.user, mechanism):
            return RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"
        return 0, None
    if a.iterations < mechanism.min_iterations:
        return UNACCEPTABLE_CREDENTIAL, "Too few iterations"
    if a.iterations > MAX_ITERATIONS:
        return UNACCEPTABLE_CREDENTIAL, "Too many iterations"
    if not a.salt or not a.salted_password:
        return UNACCEPTABLE_CREDENTIAL, "Salt and salted password must not be empty"
    return 0, None


def describe_users(requested: list[str] | None, credentials: Mapping[str, Mapping[str, ScramCredential]]
                   ) -> list[tuple[str, int, str | None, list[tuple[int, int]]]]:
    """DescribeUserScramCredentials: per user (name, error, message, [(mechanism type, iterations)]).
    `requested` None or empty describes every user with a credential, as Kafka does."""
    if not requested:
        requested = sorted(u for u, creds in credentials.items() if creds)
    counts = {u: requested.count(u) for u in requested}
    out: list[tuple[str, int, str | None, list[tuple[int, int]]]] = []
    for user in dict.fromkeys(requested):
        creds = credentials.get(user) or {}
        if counts[user] > 1:
            out.append((user, DUPLICATE_RESOURCE, "Cannot describe the same user more than once", []))
        elif not creds:
            out.append((user, RESOURCE_NOT_FOUND, f"Attempt to describe nonexistent user {user}", []))
        else:
            info = sorted((SCRAM_MECHANISMS[m].type, c.iterations) for m, c in creds.items() if m in SCRAM_MECHANISMS)
            out.append((user, 0, None, info))
    return out
