"""What one event-loop turn costs a request: a task resumed from the selector callback against an answer given
inside the callback (issue 20).

    python -m benchmarks.loop_turn [--round-trips 20000] [--rounds 3]

Our broker serves each connection with a task. A request's bytes are read by the selector's callback, which
completes the future the task waits on; the task runs one loop turn later (asyncio schedules its wake-up with
``call_soon``, behind the turn's other callbacks, then ``select`` runs again). Answering inside the callback is the
floor a hand-driven coroutine (Python 3.12's eager tasks) could reach. A client process sends 8-byte frames one at a
time and times each round trip; the server is the broker's own event loop (``broker.event_loop``, its idle timer
listening, as with metrics on). The two servers alternate, round by round; the figure is the difference of the
medians, the cost of the turn on each request that waits for one.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import socket
import statistics
import time

from benchmarks._common import emit_json, fmt, ratio
from common.wire import recv_exact

WARMUP = 2000
FRAME = b"\x00\x00\x00\x04ping"


def client(port: int, round_trips: int, out: multiprocessing.Queue) -> None:
    """Round trips one at a time; puts their median and p99 in µs (after the warm-up) on `out`."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    rtts = []
    with sock:
        for _ in range(WARMUP + round_trips):
            t = time.perf_counter_ns()
            sock.sendall(FRAME)
            recv_exact(sock, len(FRAME))
            rtts.append(time.perf_counter_ns() - t)
    measured = sorted(rtts[WARMUP:])
    out.put((statistics.median(measured) / 1000, measured[int(len(measured) * 0.99)] / 1000))


async def _serve(mode: str, ports: multiprocessing.Queue) -> None:
    from broker.event_loop import idle_timer

    loop = asyncio.get_running_loop()
    timer = idle_timer(loop)
    if timer is not None:
        timer.add_listener(lambda _ns: None)
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.setblocking(False)
        ports.put(server.getsockname()[1])
        conn, _ = await loop.sock_accept(server)
    conn.setblocking(False)
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    closed = loop.create_future()
    waiter: list[asyncio.Future] = []
    received = bytearray()

    def on_readable() -> None:
        try:
            data = conn.recv(65536)
        except BlockingIOError:
            return
        if not data:
            loop.remove_reader(conn.fileno())
            closed.set_result(None)
            for w in waiter:
                if not w.done():
                    w.set_result(None)
            return
        if mode == "callback":
            conn.send(data)
            return
        received.extend(data)
        if waiter and not waiter[0].done():
            waiter[0].set_result(None)

    loop.add_reader(conn.fileno(), on_readable)
    while mode == "task" and not closed.done():
        waiter[:] = [loop.create_future()]
        await waiter[0]   # as Connection._readable: the task resumes one turn after the callback
        if received:
            conn.send(bytes(received))
            received.clear()
    await closed
    conn.close()


def server(mode: str, ports: multiprocessing.Queue) -> None:
    from broker.event_loop import new_event_loop

    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        runner.run(_serve(mode, ports))


def one(mode: str, round_trips: int) -> tuple[float, float]:
    """(median, p99) round trip in µs against a server of `mode` (``task`` or ``callback``)."""
    ctx = multiprocessing.get_context("spawn")
    ports, out = ctx.Queue(), ctx.Queue()
    srv = ctx.Process(target=server, args=(mode, ports))
    srv.start()
    procs = [srv]
    try:
        port = ports.get(timeout=30)
        procs.append(ctx.Process(target=client, args=(port, round_trips, out)))
        procs[-1].start()
        result = out.get(timeout=600)
        for proc in reversed(procs):
            proc.join(30)
        return result
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.kill()


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--round-trips", type=int, default=20000)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args(argv)
    if args.round_trips < 1 or args.rounds < 1:
        p.error("--round-trips and --rounds: positive")
    rounds = []
    for n in range(args.rounds):
        order = ("task", "callback") if n % 2 == 0 else ("callback", "task")
        got = {mode: one(mode, args.round_trips) for mode in order}
        task_p50, callback_p50 = round(got["task"][0], 1), round(got["callback"][0], 1)
        rounds.append({"task_p50_us": task_p50, "callback_p50_us": callback_p50,
                       "task_p99_us": round(got["task"][1], 1), "callback_p99_us": round(got["callback"][1], 1),
                       "turn_us": round(task_p50 - callback_p50, 1), "loadavg_1m": round(os.getloadavg()[0], 2)})
        print(f"round {n + 1}: round trip p50 {fmt(rounds[-1]['task_p50_us'])} µs with the task resumed, "
              f"{fmt(rounds[-1]['callback_p50_us'])} µs answered in the callback (ratio "
              f"{fmt(ratio(got['task'][0], got['callback'][0]))}): one loop turn {fmt(rounds[-1]['turn_us'])} µs; "
              f"p99 {fmt(rounds[-1]['task_p99_us'])} / {fmt(rounds[-1]['callback_p99_us'])} µs "
              f"(load {rounds[-1]['loadavg_1m']})", flush=True)
    turns = [r["turn_us"] for r in rounds]
    print(f"one loop turn: {fmt(min(turns))}–{fmt(max(turns))} µs per request over {len(turns)} rounds")
    result = {"rounds": rounds, "turn_us_min": min(turns), "turn_us_max": max(turns)}
    emit_json("loop_turn", result)
    return result


if __name__ == "__main__":
    main()
