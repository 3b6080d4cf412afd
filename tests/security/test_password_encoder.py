"""Kafka's password encoder (broker/security/password_encoder.py): what one secret encodes, it decodes; another
secret, a damaged value or a wrong length is refused; the stored fields are Kafka's."""

from __future__ import annotations

import pytest

from broker.security.password_encoder import PasswordEncoder, PasswordEncoderError


@pytest.mark.parametrize("cipher", ["AES/CBC/PKCS5Padding", "AES/GCM/NoPadding"])
@pytest.mark.parametrize("key_factory", ["PBKDF2WithHmacSHA512", "PBKDF2WithHmacSHA1"])
def test_round_trip(cipher, key_factory):
    enc = PasswordEncoder("the-secret", key_factory=key_factory, cipher=cipher, iterations=1024)
    for password in ("keystore-pw", "", "pässwörd 🔑"):
        encoded = enc.encode(password)
        assert password not in encoded or not password
        assert enc.decode(encoded) == password
    assert enc.encode("x") != enc.encode("x")   # a new salt and IV every time


def test_fields_are_kafkas():
    fields = dict(item.split(":", 1) for item in PasswordEncoder("s").encode("abc").split(","))
    assert set(fields) == {"keyFactoryAlgorithm", "cipherAlgorithm", "keyLength", "salt", "iterations",
                           "encryptedPassword", "passwordLength", "initializationVector"}
    assert (fields["keyFactoryAlgorithm"], fields["cipherAlgorithm"], fields["keyLength"], fields["iterations"],
            fields["passwordLength"]) == ("PBKDF2WithHmacSHA512", "AES/CBC/PKCS5Padding", "128", "4096", "3")


def test_another_secret_or_a_damaged_value_is_refused():
    encoded = PasswordEncoder("right").encode("keystore-pw")
    with pytest.raises(PasswordEncoderError, match="Password could not be decoded"):
        PasswordEncoder("wrong").decode(encoded)
    with pytest.raises(PasswordEncoderError, match="Password could not be decoded"):
        PasswordEncoder("right").decode("not-an-encoded-password")
    bad_length = encoded.replace("passwordLength:11", "passwordLength:12")
    with pytest.raises(PasswordEncoderError, match="sanity check of length failed"):
        PasswordEncoder("right").decode(bad_length)


def test_configured_by_server_properties():
    assert PasswordEncoder.from_config({}) is None
    enc = PasswordEncoder.from_config({"password.encoder.secret": "s", "password.encoder.iterations": "2048",
                                       "password.encoder.cipher.algorithm": "AES/GCM/NoPadding"})
    assert enc is not None and (enc.iterations, enc.cipher) == (2048, "AES/GCM/NoPadding")
    with pytest.raises(PasswordEncoderError, match="password.encoder.cipher.algorithm=DES is not supported"):
        PasswordEncoder.from_config({"password.encoder.secret": "s", "password.encoder.cipher.algorithm": "DES"})


# Written by a real Apache Kafka 3.9.2 broker (password.encoder.secret=s3cret-for-test) into /config/brokers/0 for
# `--add-config listener.name.ssl.ssl.key.password=abc`, read back from ZooKeeper.
KAFKA_ENCODED = (
    "initializationVector:h+68fyz9eRkLYJxF25GIXg==,keyLength:128,salt:Ysj2+ecM9LhkgZ+ufvIVdWbd9LKucf/85X3zRqMqy0IU6CRE/"
    "wxDSJ+HICKrjZCyIEFlmTIB3kPS2ctWjldkMg4Nqx4JrFIjqnvHOkF/jJ1jvOhMYsBR+Con+kwxO3WcoBIgjH3PrISjORlhSYzSq/4IsuIBglN4QJ"
    "gsozCZsS0bjj/Hypr7JJy8EIrjy5Dk/96SIneUE6HqayqMjtekipLCeobYHl+bFdFODka/Eu05ks6Z8SmyTjUPPtBvkHnyz9YU4Ac0QjGFLItwr4"
    "mJTYGI8C3VEICsV5ThFHUOobyE1GWGQ+m8DIOprG1jeFYjsMMyyeNOduxQguKIxp+3pA==,keyFactoryAlgorithm:PBKDF2WithHmacSHA512,"
    "cipherAlgorithm:AES/CBC/PKCS5Padding,iterations:4096,passwordLength:3,encryptedPassword:XOBMD1hTrevTdObTfeJopg==")


def test_reads_what_kafka_wrote():
    assert PasswordEncoder("s3cret-for-test").decode(KAFKA_ENCODED) == "abc"
    with pytest.raises(PasswordEncoderError):
        PasswordEncoder("another-secret").decode(KAFKA_ENCODED)
