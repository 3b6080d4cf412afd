"""Kafka's password encoder for dynamic password configs (`password.encoder.secret`; Kafka's
EncryptingPasswordEncoder): a password stored in ZooKeeper as a dynamic broker config is kept encrypted, as
comma-separated `key:value` pairs (a 256-byte random salt, a key derived from the secret with PBKDF2, AES in
CBC/PKCS5 or GCM mode), so a broker of either kind with the same secret reads what the other wrote.
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass

from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

SECRET = "password.encoder.secret"
OLD_SECRET = "password.encoder.old.secret"
KEY_FACTORY = "password.encoder.keyfactory.algorithm"
CIPHER = "password.encoder.cipher.algorithm"
KEY_LENGTH = "password.encoder.key.length"
ITERATIONS = "password.encoder.iterations"
# PasswordEncoderConfigs' defaults; Kafka's key factory is PBKDF2WithHmacSHA512 when the JVM has it (it does).
DEFAULT_CIPHER, DEFAULT_KEY_LENGTH, DEFAULT_ITERATIONS = "AES/CBC/PKCS5Padding", 128, 4096
DEFAULT_KEY_FACTORY = "PBKDF2WithHmacSHA512"
_DIGESTS = {"PBKDF2WithHmacSHA512": "sha512", "PBKDF2WithHmacSHA256": "sha256", "PBKDF2WithHmacSHA1": "sha1"}
_GCM_TAG = "authenticationTagLength"


class PasswordEncoderError(ValueError):
    """The secret is missing, or a stored value cannot be decoded with it."""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _java_length(text: str) -> int:
    """String.length(): UTF-16 code units, which Kafka stores as the sanity check."""
    return len(text.encode("utf-16-le")) // 2


@dataclass(frozen=True)
class PasswordEncoder:
    """Encodes with the configured algorithms; decodes with the ones stored beside each value."""

    secret: str
    key_factory: str = DEFAULT_KEY_FACTORY
    cipher: str = DEFAULT_CIPHER
    key_length: int = DEFAULT_KEY_LENGTH
    iterations: int = DEFAULT_ITERATIONS

    @classmethod
    def from_config(cls, props: Mapping[str, str], secret_key: str = SECRET) -> PasswordEncoder | None:
        """The encoder server.properties configures, None without a secret (Kafka then refuses password configs)."""
        secret = props.get(secret_key)
        if not secret:
            return None
        enc = cls(secret, props.get(KEY_FACTORY) or DEFAULT_KEY_FACTORY, props.get(CIPHER, DEFAULT_CIPHER),
                  int(props.get(KEY_LENGTH, DEFAULT_KEY_LENGTH)), int(props.get(ITERATIONS, DEFAULT_ITERATIONS)))
        enc._check(enc.key_factory, enc.cipher)
        return enc

    @staticmethod
    def _check(key_factory: str, cipher: str) -> None:
        if key_factory not in _DIGESTS:
            raise PasswordEncoderError(f"{KEY_FACTORY}={key_factory} is not supported (use one of "
                                       f"{', '.join(_DIGESTS)})")
        if cipher not in ("AES/CBC/PKCS5Padding", "AES/GCM/NoPadding"):
            raise PasswordEncoderError(f"{CIPHER}={cipher} is not supported (use AES/CBC/PKCS5Padding or "
                                       "AES/GCM/NoPadding)")

    def _key(self, key_factory: str, key_length: int, salt: bytes, iterations: int) -> bytes:
        return hashlib.pbkdf2_hmac(_DIGESTS[key_factory], self.secret.encode(), salt, iterations, key_length // 8)

    def encode(self, password: str) -> str:
        salt = os.urandom(256)
        key = self._key(self.key_factory, self.key_length, salt, self.iterations)
        data = password.encode()
        params: dict[str, str]
        if self.cipher.startswith("AES/GCM/"):
            iv = os.urandom(12)
            encrypted = AESGCM(key).encrypt(iv, data, None)
            params = {"initializationVector": _b64(iv), _GCM_TAG: "128"}
        else:
            iv = os.urandom(16)
            padder = padding.PKCS7(128).padder()
            enc = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
            encrypted = enc.update(padder.update(data) + padder.finalize()) + enc.finalize()
            params = {"initializationVector": _b64(iv)}
        fields = {"keyFactoryAlgorithm": self.key_factory, "cipherAlgorithm": self.cipher,
                  "keyLength": str(self.key_length), "salt": _b64(salt), "iterations": str(self.iterations),
                  "encryptedPassword": _b64(encrypted), "passwordLength": str(_java_length(password)), **params}
        return ",".join(f"{k}:{v}" for k, v in fields.items())

    def decode(self, encoded: str) -> str:
        """The password; PasswordEncoderError when the value is not an encoded password or the secret differs."""
        try:
            params = dict(item.split(":", 1) for item in encoded.split(","))
            key_factory, cipher = params["keyFactoryAlgorithm"], params["cipherAlgorithm"]
            self._check(key_factory, cipher)
            key = self._key(key_factory, int(params["keyLength"]), base64.b64decode(params["salt"]),
                            int(params["iterations"]))
            iv, data = base64.b64decode(params["initializationVector"]), base64.b64decode(params["encryptedPassword"])
            length = int(params["passwordLength"])
        except (KeyError, ValueError) as e:
            raise PasswordEncoderError(f"Password could not be decoded: {e}") from None
        try:
            if cipher.startswith("AES/GCM/"):
                plain = AESGCM(key).decrypt(iv, data, None)
            else:
                dec = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
                unpadder = padding.PKCS7(128).unpadder()
                plain = unpadder.update(dec.update(data) + dec.finalize()) + unpadder.finalize()
            password = plain.decode()
        except Exception:   # a wrong secret fails the padding, the tag or the UTF-8 check
            raise PasswordEncoderError("Password could not be decoded") from None
        if _java_length(password) != length:
            raise PasswordEncoderError("Password could not be decoded, sanity check of length failed")
        return password
