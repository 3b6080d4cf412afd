"""The Apache Kafka broker's heap: the launcher's small default, replaced by KAFKA_HEAP_OPTS from the environment as
kafka-server-start.sh does (no JVM started: the jar and Java lookups are stubbed)."""

from kafkascope.local import apache_kafka


def _command(tmp_path, monkeypatch):
    monkeypatch.setattr(apache_kafka, "ensure_kafka", lambda version: tmp_path / "libs")
    monkeypatch.setattr(apache_kafka, "ensure_java_and_maven", lambda need_maven=False: ("java", None))
    props = tmp_path / "server.properties"
    props.write_text("broker.id=0\n")
    return apache_kafka.broker_command(props)


def test_the_launcher_default_heap_without_kafka_heap_opts(tmp_path, monkeypatch):
    monkeypatch.delenv("KAFKA_HEAP_OPTS", raising=False)
    cmd = _command(tmp_path, monkeypatch)
    assert cmd[1:3] == ["-Xmx512m", "-Xms128m"]


def test_kafka_heap_opts_replaces_it(tmp_path, monkeypatch):
    monkeypatch.setenv("KAFKA_HEAP_OPTS", "-Xmx1G -Xms1G")
    cmd = _command(tmp_path, monkeypatch)
    assert cmd[1:3] == ["-Xmx1G", "-Xms1G"] and "-Xmx512m" not in cmd
    monkeypatch.setenv("KAFKA_HEAP_OPTS", "  ")   # blank: as unset
    assert _command(tmp_path, monkeypatch)[1:3] == ["-Xmx512m", "-Xms128m"]
