"""`kafkascope configs --entity-type users`: SCRAM users created as with kafka-configs.sh, then used to log in."""

from __future__ import annotations

import uuid

from confluent_kafka.admin import AdminClient

from kafkascope.cli import main


def _cli(capsys, secured, *args: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["configs", "--bootstrap-server", secured.bootstrap("PLAINTEXT"), *args])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return code, captured.out


def test_add_describe_login_delete(capsys, secured):
    user = f"cli{uuid.uuid4().hex[:6]}"
    code, out = _cli(capsys, secured, "--alter", "--entity-type", "users", "--entity-name", user,
                     "--add-config", "SCRAM-SHA-512=[iterations=8192,password=p,w],SCRAM-SHA-256=[password=x]")
    assert (code, out) == (0, f"Completed updating config for user {user}.\n")
    code, out = _cli(capsys, secured, "--describe", "--entity-type", "users", "--entity-name", user)
    assert (code, out) == (0, f"SCRAM credential configs for user-principal '{user}' are "
                              "SCRAM-SHA-256=iterations=4096, SCRAM-SHA-512=iterations=8192\n")
    out = _cli(capsys, secured, "--describe", "--entity-type", "users")[1]   # every user
    assert f"SCRAM credential configs for user-principal '{user}' are " in out
    conf = secured.client_conf("SASL_PLAINTEXT", "SCRAM-SHA-512", user, "p,w")
    assert AdminClient(conf).list_topics(timeout=10).brokers

    code, _ = _cli(capsys, secured, "--alter", "--entity-type", "users", "--entity-name", user,
                   "--delete-config", "SCRAM-SHA-256")
    assert code == 0
    out = _cli(capsys, secured, "--describe", "--entity-type", "users", "--entity-name", user)[1]
    assert out == f"SCRAM credential configs for user-principal '{user}' are SCRAM-SHA-512=iterations=8192\n"
