"""`kafkascope configs`: describe, alter and delete topic configs; broker alteration errors."""

from __future__ import annotations


def _dynamic(out: str) -> dict[str, str]:
    """`  k=v sensitive=... synonyms={...}` lines into {k: v}."""
    return dict(line.split()[0].split("=", 1) for line in out.splitlines() if line.startswith("  "))


def test_topic_describe_alter_delete(cli, topic_name):
    assert cli("topics", "--create", "--topic", topic_name)[0] == 0
    code, out, _ = cli("configs", "--describe", "--entity-type", "topics", "--entity-name", topic_name)
    assert (code, out) == (0, f"Dynamic configs for topic {topic_name} are:\n")

    code, out, _ = cli("configs", "--alter", "--topic", topic_name,
                       "--add-config", "retention.ms=60000,cleanup.policy=[compact,delete]")
    assert (code, out) == (0, f"Completed updating config for topic {topic_name}.\n")
    out = cli("configs", "--describe", "--topic", topic_name)[1]
    assert _dynamic(out) == {"retention.ms": "60000", "cleanup.policy": "compact,delete"}
    assert "sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=60000" in out

    assert cli("configs", "--alter", "--topic", topic_name, "--delete-config", "retention.ms")[0] == 0
    out = cli("configs", "--describe", "--topic", topic_name)[1]
    assert _dynamic(out) == {"cleanup.policy": "compact,delete"}

    out = cli("configs", "--describe", "--topic", topic_name, "--all")[1]
    assert out.startswith(f"All configs for topic {topic_name} are:\n") and "retention.ms=" in out


def test_broker_describe_and_refused_alter(cli):
    code, out, _ = cli("configs", "--describe", "--entity-type", "brokers")
    assert code == 0 and out.startswith("Dynamic configs for broker ")
    broker_id = out.split()[4]
    # log.dirs cannot change at runtime: the broker's refusal is printed as one line.
    code, out, err = cli("configs", "--alter", "--entity-type", "brokers", "--entity-name", broker_id,
                         "--add-config", "log.dirs=/nonexistent")
    assert code == 1 and out == "" and err.startswith("kafkascope configs: error: ") and err.count("\n") == 1


def test_alter_needs_a_change(cli, topic_name):
    code, _, err = cli("configs", "--alter", "--topic", topic_name)
    assert code == 2 and "--add-config" in err


def test_a_quota_key_on_a_user_names_the_tool_that_sets_it(cli):
    code, out, err = cli("configs", "--alter", "--entity-type", "users", "--entity-name", "alice",
                         "--add-config", "producer_byte_rate=1024")
    assert code != 0 and out == ""
    assert "producer_byte_rate" in err and "kafka-configs.sh" in err
