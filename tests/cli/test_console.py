"""console-producer with keys and headers, read back by console-consumer."""

from __future__ import annotations


def test_producer_keys_and_headers_roundtrip(cli, cli_proc, topic_name):
    assert cli("topics", "--create", "--topic", topic_name, "--partitions", "1")[0] == 0
    lines = b"h1:v1,h2:v2\tk1:hello\nh3\tk2:world\n\tk3:no headers\n"
    res = cli_proc("console-producer", "--topic", topic_name, "--property", "parse.key=true",
                   "--property", "key.separator=:", "--property", "parse.headers=true",
                   "--producer-property", "acks=all", stdin=lines)
    assert res.returncode == 0, res.stderr

    code, out, err = cli("console-consumer", "--topic", topic_name, "--from-beginning",
                         "--max-messages", "3", "--timeout-ms", "15000",
                         "--property", "print.key=true", "--property", "print.headers=true",
                         "--property", "print.offset=true", "--property", "print.partition=true",
                         "--property", "print.timestamp=true", "--property", "key.separator=|")
    assert code == 0 and err == "Processed a total of 3 messages\n"
    rows = [line.split("|") for line in out.splitlines()]
    assert all(r[0].startswith("CreateTime:") and int(r[0].split(":")[1]) > 0 for r in rows)
    assert [r[1:] for r in rows] == [
        ["Partition:0", "Offset:0", "h1:v1,h2:v2", "k1", "hello"],
        ["Partition:0", "Offset:1", "h3:null", "k2", "world"],
        ["Partition:0", "Offset:2", "NO_HEADERS", "k3", "no headers"],
    ]


def test_consumer_partition_offset_and_idle_timeout(cli, cli_proc, topic_name):
    assert cli("topics", "--create", "--topic", topic_name)[0] == 0
    res = cli_proc("console-producer", "--topic", topic_name, stdin=b"a\nb\nc\n")
    assert res.returncode == 0, res.stderr
    code, out, err = cli("console-consumer", "--topic", topic_name, "--partition", "0", "--offset", "1",
                         "--timeout-ms", "2000")
    assert (code, out, err) == (0, "b\nc\n", "Processed a total of 2 messages\n")


def test_producer_reports_missing_key_separator(cli, cli_proc, topic_name):
    assert cli("topics", "--create", "--topic", topic_name)[0] == 0
    res = cli_proc("console-producer", "--topic", topic_name, "--property", "parse.key=true",
                   stdin=b"no separator here\n")
    assert res.returncode == 1
    assert res.stderr.decode() == ("kafkascope console-producer: error: No key separator found on line "
                                   "number 1: 'no separator here'\n")
