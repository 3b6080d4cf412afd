"""One consumer-group member, run as a subprocess so a test can close it (stdin "close") or kill -9 it.

    python -m tests.e2e.group_member CLIENT BOOTSTRAP TOPIC GROUP SESSION_TIMEOUT_MS

Prints one JSON line per assignment change: {"assignment": [partition, ...]}; "closed" after a clean close.
"""

from __future__ import annotations

import asyncio
import json
import sys

from tests.e2e.member_control import stop, watch_stdin


def report(parts) -> None:
    print(json.dumps({"assignment": sorted(parts)}), flush=True)


def run_confluent(bootstrap: str, topic: str, group: str, session_ms: int) -> None:
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "session.timeout.ms": session_ms,
                  "heartbeat.interval.ms": 300, "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "partition.assignment.strategy": "range"})
    c.subscribe([topic])
    last = None
    while not stop.is_set():
        c.poll(0.2)
        cur = [tp.partition for tp in c.assignment()]
        if cur != last:
            report(cur)
            last = cur
    c.close()


def run_kafka_python(bootstrap: str, topic: str, group: str, session_ms: int) -> None:
    from kafka import KafkaConsumer
    c = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, session_timeout_ms=session_ms,
                      heartbeat_interval_ms=300, auto_offset_reset="earliest", enable_auto_commit=False)
    last = None
    while not stop.is_set():
        # Not shorter: kafka-python 3.0.12 strands a join whose poll() times out mid-way when the rejoin was caused
        # by a metadata change seen by the leader (need_rejoin() turns False once the in-flight join has assigned,
        # so the join's result is never taken up and the heartbeat stays disabled until the coordinator expires the
        # member). A loaded machine made a 200 ms poll too short for join + sync.
        c.poll(timeout_ms=2000)
        cur = sorted(tp.partition for tp in c.assignment())
        if cur != last:
            report(cur)
            last = cur
    c.close()


def run_aiokafka(bootstrap: str, topic: str, group: str, session_ms: int) -> None:
    from aiokafka import AIOKafkaConsumer

    async def main() -> None:
        c = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, session_timeout_ms=session_ms,
                             heartbeat_interval_ms=300, auto_offset_reset="earliest", enable_auto_commit=False)
        await c.start()
        last = None
        while not stop.is_set():
            await c.getmany(timeout_ms=200)
            cur = sorted(tp.partition for tp in c.assignment())
            if cur != last:
                report(cur)
                last = cur
        await c.stop()
    asyncio.run(main())


def main() -> None:
    client, bootstrap, topic, group, session_ms = sys.argv[1:6]
    watch_stdin()
    {"confluent": run_confluent, "kafka-python": run_kafka_python, "aiokafka": run_aiokafka}[client](
        bootstrap, topic, group, int(session_ms))
    print("closed", flush=True)


if __name__ == "__main__":
    main()
