"""AlterUserScramCredentials / DescribeUserScramCredentials (KIP-554) with confluent-kafka's AdminClient, and a
user created that way authenticating over SASL_PLAINTEXT."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)


def test_created_user_authenticates_and_deleted_user_is_gone(secured):
    admin = AdminClient(secured.client_conf("PLAINTEXT"))
    user = f"u{uuid.uuid4().hex[:6]}"
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192)
    futures = admin.alter_user_scram_credentials([UserScramCredentialUpsertion(user, info, b"pw-" + user.encode())])
    futures[user].result(10)
    infos = admin.describe_user_scram_credentials([user])[user].result(10).scram_credential_infos
    assert [(i.mechanism, i.iterations) for i in infos] == [(ScramMechanism.SCRAM_SHA_256, 8192)]

    md = AdminClient(secured.client_conf("SASL_PLAINTEXT", "SCRAM-SHA-256", user, f"pw-{user}")).list_topics(timeout=10)
    assert md.brokers

    admin.alter_user_scram_credentials([UserScramCredentialDeletion(user, ScramMechanism.SCRAM_SHA_256)])[user].result(10)
    with pytest.raises(KafkaException) as e:
        admin.describe_user_scram_credentials([user])[user].result(10)
    assert e.value.args[0].code() == KafkaError.RESOURCE_NOT_FOUND


def test_too_few_iterations_is_unacceptable(secured):
    admin = AdminClient(secured.client_conf("PLAINTEXT"))
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 100)
    futures = admin.alter_user_scram_credentials([UserScramCredentialUpsertion("weak", info, b"pw")])
    with pytest.raises(KafkaException) as e:
        futures["weak"].result(10)
    assert e.value.args[0].code() == KafkaError.UNACCEPTABLE_CREDENTIAL
