"""One confluent-kafka consumer with group.protocol=consumer (KIP-848), run as a subprocess so a test can close it
(stdin "close") or kill -9 it.

    python -m tests.e2e.consumer_protocol_member BOOTSTRAP TOPIC GROUP [INSTANCE_ID]   (TOPIC "^re": a regex)

Commits every message it reads (synchronously). Prints one JSON line per assignment change,
{"assignment": [partition, ...], "topics": [topic, ...]}, one per commit, {"committed": [partition, next_offset]}, and "closed" after a
clean close (which leaves the group with member epoch -1).
"""

from __future__ import annotations

import json
import sys

from tests.e2e.member_control import stop, watch_stdin


def main() -> None:
    from confluent_kafka import Consumer

    bootstrap, topic, group = sys.argv[1:4]
    instance = sys.argv[4] if len(sys.argv) > 4 else None
    watch_stdin()
    # session.timeout.ms, heartbeat.interval.ms and the assignor are the broker's under this protocol.
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  **({"group.instance.id": instance} if instance else {})})
    c.subscribe([topic])
    last = None
    while not stop.is_set():
        msg = c.poll(0.2)
        if msg is not None and msg.error() is None:
            c.commit(message=msg, asynchronous=False)
            print(json.dumps({"committed": [msg.partition(), msg.offset() + 1]}), flush=True)
        held = c.assignment()
        cur = sorted(tp.partition for tp in held)
        topics = sorted({tp.topic for tp in held})
        if (cur, topics) != last:
            print(json.dumps({"assignment": cur, "topics": topics}), flush=True)
            last = (cur, topics)
    c.close()
    print("closed", flush=True)


if __name__ == "__main__":
    main()
