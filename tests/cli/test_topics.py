"""`kafkascope topics` against a real broker."""

from __future__ import annotations

import time

from kafkascope.cli import main


def test_create_list_describe_alter_delete(cli, topic_name):
    code, out, _ = cli("topics", "--create", "--topic", topic_name, "--partitions", "2",
                       "--replication-factor", "1", "--config", "cleanup.policy=compact")
    assert (code, out) == (0, f"Created topic {topic_name}.\n")

    code, out, _ = cli("topics", "--list")
    assert code == 0 and topic_name in out.splitlines()

    code, out, _ = cli("topics", "--describe", "--topic", topic_name)
    assert code == 0
    head, *parts = out.splitlines()
    fields = dict(f.split(": ", 1) for f in head.split("\t"))
    assert fields["Topic"] == topic_name and fields["TopicId"]
    assert (fields["PartitionCount"], fields["ReplicationFactor"]) == ("2", "1")
    assert "cleanup.policy=compact" in fields["Configs"].split(",")
    assert [p.split("\t")[1:3] for p in parts] == [["Topic: " + topic_name, "Partition: 0"],
                                                  ["Topic: " + topic_name, "Partition: 1"]]
    assert all(p.startswith("\t") and "\tLeader: " in p and "\tReplicas: " in p and "\tIsr: " in p
               for p in parts)

    assert cli("topics", "--alter", "--topic", topic_name, "--partitions", "3")[0] == 0
    deadline = time.monotonic() + 15  # partition metadata propagates asynchronously
    while True:
        out = cli("topics", "--describe", "--topic", topic_name)[1]
        if "PartitionCount: 3" in out or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert "PartitionCount: 3" in out and out.count("\tPartition: ") == 3

    assert cli("topics", "--delete", "--topic", topic_name)[0] == 0
    assert cli("topics", "--delete", "--topic", topic_name, "--if-exists")[0] == 0


def test_create_existing_topic_is_a_one_line_error(cli, topic_name):
    assert cli("topics", "--create", "--topic", topic_name)[0] == 0
    code, out, err = cli("topics", "--create", "--topic", topic_name)
    assert code == 1 and out == ""
    assert err == f"kafkascope topics: error: Topic '{topic_name}' already exists.\n"
    assert cli("topics", "--create", "--topic", topic_name, "--if-not-exists") == (0, "", "")


def test_delete_missing_topic_fails(cli, topic_name):
    code, _, err = cli("topics", "--delete", "--topic", topic_name)
    assert code == 1 and err.count("\n") == 1 and topic_name in err


def test_usage_error_exits_2(cli, capsys):
    code, _, err = cli("topics", "--create")
    assert code == 2 and err.count("\n") == 1 and "--topic" in err
    assert main(["topics", "--list"]) == 2  # no --bootstrap-server
    assert capsys.readouterr().err.count("\n") == 1


def test_unreachable_bootstrap_server_fails_fast(capsys):
    start = time.monotonic()
    code = main(["topics", "--bootstrap-server", "127.0.0.1:1", "--list"])
    elapsed = time.monotonic() - start
    out, err = capsys.readouterr()
    assert code == 1 and out == "" and elapsed < 20
    assert err.count("\n") == 1 and "cannot reach Kafka at 127.0.0.1:1" in err
    assert "Traceback" not in err
