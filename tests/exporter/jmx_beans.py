"""MBean sets to feed both the real jmx_exporter and ours, and the rule files to feed them with.

* :func:`broker_beans`: every MBean attribute of a real broker of ours (in-process, standalone, on 127.0.0.1) after
  it has served CreateTopics, Produce, Fetch, a failing Produce and Metadata;
* ``data/jmx/beans-edge.tsv``: Kafka MBeans we do not have (raft, quotas, TLS connections, fetcher lag) and odd
  ones (quoted values, strings, big and tiny doubles) that make the shipped files' other rules fire.

Bean files are ``objectName TAB attribute TAB type TAB value`` (tests/support/JmxHarness.java reads them too).
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from exporter.jmx_config import parse_properties
from exporter.naming import ALIASES
from tests.support.jmx_reference import _unesc, java_type, write_beans

DATA = Path(__file__).with_name("data") / "jmx"
Bean = tuple[str, str, object]  # object name, attribute, value

# Rule files compared: the two we ship, jmx_exporter's own Kafka examples, and one written to exercise the rest.
RULE_FILES = {
    "strimzi": ALIASES["strimzi"],
    "confluent": ALIASES["confluent"],
    "kafka-2_0_0": DATA / "kafka-2_0_0.yml",
    "kafka-kraft-3_0_0": DATA / "kafka-kraft-3_0_0.yml",
    "features": DATA / "rules-features.yml",
}
BEAN_SETS = ("broker", "edge")


def rules_text(name: str) -> str:
    """The file as given to the agent: startDelaySeconds dropped (it only makes the agent refuse early scrapes)."""
    lines = RULE_FILES[name].read_text().splitlines()
    return "\n".join(x for x in lines if not x.startswith("startDelaySeconds:")) + "\n"


def read_beans(path: Path) -> list[Bean]:
    out: list[Bean] = []
    for line in path.read_text().split("\n"):  # not splitlines: \u2028 is no line end here
        if not line or line.startswith("#"):
            continue
        name, attr, typ, text = line.split("\t")
        text = _unesc(text)
        value: object = int(text) if typ == "long" else float(text) if typ == "double" else \
            text == "true" if typ == "boolean" else text
        out.append((_unesc(name), _unesc(attr), value))
    return out


def split_name(object_name: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    domain, _, keys = object_name.partition(":")
    return domain, parse_properties(keys)


def object_name(domain: str, props: tuple[tuple[str, str], ...]) -> str:
    return domain + ":" + ",".join(f"{k}={v}" for k, v in props)


def broker_beans() -> list[Bean]:
    """A live broker's MBean attributes (values as they are at the end of the workload)."""
    return asyncio.run(_broker_beans())


async def _broker_beans() -> list[Bean]:
    from broker.broker import Broker
    from broker.config import BrokerConfig
    from broker.log.records import Record, build_batch
    from exporter.mbeans import mbeans
    from kafkascope.local.wire import WireClient
    from tests.e2e.helpers import create_topic, fetch_raw

    with tempfile.TemporaryDirectory(prefix="jmx-beans-") as d:
        cfg = BrokerConfig.from_properties({"log.dirs": d, "listeners": "PLAINTEXT://127.0.0.1:0",
                                            "prometheus.listener": "127.0.0.1:0"})
        b = Broker(cfg)
        port = await b.start()
        try:
            def workload() -> None:
                create_topic(port, "orders", 2)
                batch = build_batch([Record(timestamp=1, key=b"k", value=b"v" * 50) for _ in range(5)])
                with WireClient(port) as w:
                    for acks in (1, 5):  # acks=5: INVALID_REQUIRED_ACKS
                        w.call(0, 9, {"transactional_id": None, "acks": acks, "timeout": 5000, "topic_data": [
                            {"name": "orders", "partition_data": [{"index": 0, "records": batch}]}]})
                    w.call(3, 9, {"topics": None, "allow_auto_topic_creation": False,
                                  "include_cluster_authorized_operations": False,
                                  "include_topic_authorized_operations": False})
                fetch_raw(port, "orders")

            await asyncio.to_thread(workload)
            await asyncio.sleep(0.2)
            beans = list(mbeans(b.metrics.registry))
        finally:
            await b.stop()
    return [(object_name(dom, props), attr, v) for dom, props, attr, v in beans]


def beans(set_name: str) -> list[Bean]:
    return read_beans(DATA / f"beans-{set_name}.tsv")


def record_broker_beans() -> Path:
    return write_beans(broker_beans(), DATA / "beans-broker.tsv")


__all__ = ["BEAN_SETS", "DATA", "RULE_FILES", "beans", "broker_beans", "java_type", "object_name", "read_beans",
           "record_broker_beans", "rules_text", "split_name"]
