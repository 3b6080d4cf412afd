"""One group member for benchmarks/rebalance_time.py, in its own process so four members do not share a GIL.

    python -m benchmarks.rebalance_member BOOTSTRAP TOPIC GROUP MODE HEARTBEAT_MS

MODE: `eager` (classic protocol, range assignor), `cooperative` (classic, cooperative-sticky: KIP-429) or
`consumer` (KIP-848, group.protocol=consumer, the broker's `uniform` assignor). It creates its consumer, prints
"ready", and subscribes when stdin says "go" (so process start-up is not part of the measured time); then it
polls, consuming, until stdin says "close". Every line it prints is JSON with `t`, time.monotonic() (one clock for
every process on the machine, Linux's CLOCK_MONOTONIC):

    {"t": ..., "subscribed": true}                 right before subscribe()
    {"t": ..., "assignment": [p, ...]}             after each rebalance callback, what it now holds
    {"t": ..., "consumed": n}                      about once a second while it holds partitions
    {"t": ..., "closed": true}
"""

from __future__ import annotations

import json
import sys
import threading
import time

SESSION_MS = 10_000  # classic modes only: under KIP-848 the session timeout is the broker's


def config(bootstrap: str, group: str, mode: str, heartbeat_ms: int) -> dict:
    base = {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "latest",
            "enable.auto.commit": True, "auto.commit.interval.ms": 1000}
    if mode == "consumer":   # the heartbeat interval and the assignor are the broker's (uniform by default)
        return {**base, "group.protocol": "consumer"}
    strategy = {"eager": "range", "cooperative": "cooperative-sticky"}[mode]
    return {**base, "group.protocol": "classic", "partition.assignment.strategy": strategy,
            "session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": heartbeat_ms}


def emit(**event: object) -> None:
    print(json.dumps({"t": time.monotonic(), **event}), flush=True)


def main() -> None:
    from confluent_kafka import Consumer

    bootstrap, topic, group, mode, heartbeat_ms = sys.argv[1:6]
    held: set[int] = set()
    # Eager callbacks carry the whole assignment (revoke all, then assign all); cooperative and KIP-848 ones
    # carry only what is added or taken away.
    incremental = mode != "eager"

    def on_assign(_c, partitions) -> None:
        nonlocal held
        got = {tp.partition for tp in partitions}
        held = held | got if incremental else got
        emit(assignment=sorted(held))

    def on_revoke(_c, partitions) -> None:
        nonlocal held
        held = held - {tp.partition for tp in partitions} if incremental else set()
        emit(assignment=sorted(held))

    c = Consumer(config(bootstrap, group, mode, int(heartbeat_ms)))
    commands: list[str] = []
    arrived = threading.Event()

    def read_stdin() -> None:
        for line in sys.stdin:
            commands.append(line.strip())
            arrived.set()
        commands.append("close")   # the driver went away
        arrived.set()

    threading.Thread(target=read_stdin, daemon=True).start()
    emit(ready=True)
    arrived.wait(300)
    if commands[:1] != ["go"]:
        c.close()
        return
    emit(subscribed=True)
    c.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
    consumed, reported = 0, time.monotonic()
    while "close" not in commands:
        msg = c.poll(0.1)
        if msg is not None and msg.error() is None:
            consumed += 1
        if time.monotonic() - reported >= 1.0 and held:
            emit(consumed=consumed)
            reported = time.monotonic()
    c.close()
    emit(closed=True)


if __name__ == "__main__":
    main()
