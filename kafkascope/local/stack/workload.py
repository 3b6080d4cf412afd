"""The local demo's sample workload (a child process of `kafkascope up`): what the lag monitor watches.

    python -m kafkascope.local.stack.workload BOOTSTRAP [CLIENT_PROPERTIES]
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading

from common import client_properties

SAMPLE_TOPIC = "demo-orders"
SAMPLE_GROUP = "demo-consumer"


def workload(bootstrap: str, stop: threading.Event | None = None, client: dict | None = None) -> None:
    """A producer (10 msg/s) and a consumer group that commits; `client`: security settings for every client."""
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    stop = stop or threading.Event()
    client = {**(client or {}), "bootstrap.servers": bootstrap}
    admin = AdminClient(client)
    n = len(bootstrap.split(","))
    with contextlib.suppress(Exception):
        admin.create_topics([NewTopic(SAMPLE_TOPIC, 3, min(3, n))])[SAMPLE_TOPIC].result(30)
    producer = Producer({**client, "linger.ms": 5})
    consumer = Consumer({**client, "group.id": SAMPLE_GROUP, "auto.offset.reset": "earliest",
                         "enable.auto.commit": True, "auto.commit.interval.ms": 1000,
                         "session.timeout.ms": 6000})
    consumer.subscribe([SAMPLE_TOPIC])
    i = 0
    try:
        while not stop.is_set():
            producer.produce(SAMPLE_TOPIC, value=b"order-%d" % i, key=b"%d" % (i % 16))
            producer.poll(0)
            i += 1
            consumer.poll(0.1)
    finally:
        producer.flush(5)
        consumer.close()


def main(argv: list[str]) -> int:
    if len(argv) not in (1, 2):
        print("usage: python -m kafkascope.local.stack.workload BOOTSTRAP [CLIENT_PROPERTIES]", file=sys.stderr)
        return 2
    client = client_properties.load(argv[1]) if len(argv) == 2 else {}
    ev = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: ev.set())
    signal.signal(signal.SIGINT, lambda *_: ev.set())
    workload(argv[0], ev, client)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
