"""A NULL Kafka broker: the protocol-only upper bound for produce benchmarks.

It answers just enough of the wire protocol for a librdkafka producer:

* ApiVersions (18) v0-3,
* Metadata (3) v0-12: one topic (``--topic``, default ``bench``; any requested name is answered with
  the same layout) with ``--partitions`` partitions, this process as the only broker, leader and controller,
* Fetch (1) v4-12 is advertised (so librdkafka uses RecordBatch v2) but never served,
* Produce (0) v3-10: success for every partition, base offsets increasing per partition by the record
  count of the batches received; nothing is stored.

Requests are decoded and responses encoded with the broker's own codec
(``broker.protocol.codec.parse_request`` / ``encode_response``), so the difference between this and our
broker is the cost of *doing* something (log append, indexes, bookkeeping), not of speaking kio.

    python -m benchmarks.null_broker --port 19092 --partitions 6

It prints ``LISTENING <port>`` on stdout once bound. Use ``NullBroker`` from Python to run it as a
subprocess (``with NullBroker(partitions=6) as nb: nb.bootstrap``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import struct
import subprocess
import sys
import uuid
from collections import defaultdict
from pathlib import Path

from broker.protocol.codec import encode_response, parse_request

ROOT = Path(__file__).resolve().parents[1]

API_VERSIONS, METADATA, PRODUCE, FETCH = 18, 3, 0, 1
RANGES = {PRODUCE: (3, 10), METADATA: (0, 12), API_VERSIONS: (0, 3)}
# Advertised but never served: librdkafka only uses RecordBatch v2 (MsgVer2) when the broker advertises
# Produce >= 3 *and* Fetch >= 4; without Fetch it falls back to the legacy v0 MessageSet format.
ADVERTISED = {**RANGES, FETCH: (4, 12)}
_BATCH_HDR = struct.Struct(">qi")  # baseOffset, batchLength
_RECORDS_COUNT_AT = 57             # int32 record count inside a v2 RecordBatch
NODE_ID = 0


def record_count(records: bytes | memoryview | None) -> int:
    """Number of records in a blob of v2 RecordBatches (0 if empty or malformed)."""
    if not records:
        return 0
    n = pos = 0
    end = len(records)
    while pos + 61 <= end:
        _, length = _BATCH_HDR.unpack_from(records, pos)
        n += struct.unpack_from(">i", records, pos + _RECORDS_COUNT_AT)[0]
        pos += 12 + length
    return n


class NullBrokerServer:
    def __init__(self, port: int, partitions: int, topic: str) -> None:
        self.port = port
        self.partitions = partitions
        self.topic = topic
        self.topic_id = uuid.uuid4()
        self.next_offset: dict[tuple[str, int], int] = defaultdict(int)

    def _topic_entry(self, name: str) -> dict:
        return {
            "error_code": 0, "name": name, "topic_id": self.topic_id, "is_internal": False,
            "topic_authorized_operations": -2147483648,
            "partitions": [
                {"error_code": 0, "partition_index": p, "leader_id": NODE_ID, "leader_epoch": 0,
                 "replica_nodes": [NODE_ID], "isr_nodes": [NODE_ID], "offline_replicas": []}
                for p in range(self.partitions)
            ],
        }

    def handle(self, api_key: int, api_version: int, body) -> dict | None:
        if api_key == API_VERSIONS:
            return {"error_code": 0, "throttle_time": 0, "finalized_features_epoch": -1,
                    "api_keys": [{"api_key": k, "min_version": lo, "max_version": hi}
                                 for k, (lo, hi) in sorted(ADVERTISED.items())]}
        if api_key == METADATA:
            names = [self.topic] if not body.topics else [t.name for t in body.topics if t.name]
            return {"throttle_time": 0, "cluster_id": "null-broker", "controller_id": NODE_ID,
                    "brokers": [{"node_id": NODE_ID, "host": "127.0.0.1", "port": self.port, "rack": None}],
                    "topics": [self._topic_entry(n) for n in names],
                    "cluster_authorized_operations": -2147483648}
        if api_key == PRODUCE:
            topics = []
            for t in body.topic_data:
                parts = []
                for p in t.partition_data:
                    key = (t.name, p.index)
                    base = self.next_offset[key]
                    self.next_offset[key] = base + record_count(p.records)
                    parts.append({"index": p.index, "error_code": 0, "base_offset": base,
                                  "log_append_time": -1, "log_start_offset": 0})
                topics.append({"name": t.name, "partition_responses": parts})
            if body.acks == 0:
                return None
            return {"responses": topics, "throttle_time": 0}
        raise ValueError(f"unsupported api key {api_key}")

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                frame = await reader.readexactly(size)
                api_key, api_version, corr = struct.unpack_from(">hhi", frame, 0)
                lo, hi = RANGES.get(api_key, (0, -1))
                if api_key == API_VERSIONS and api_version > hi:
                    writer.write(encode_response(API_VERSIONS, 0, corr, {
                        "error_code": 35, "api_keys": self.handle(API_VERSIONS, 0, None)["api_keys"]}))
                    continue
                if not lo <= api_version <= hi:
                    return  # unsupported: close, as Kafka does
                _, body = parse_request(frame)
                result = self.handle(api_key, api_version, body)
                if result is not None:
                    writer.write(encode_response(api_key, api_version, corr, result))
                    if writer.transport.get_write_buffer_size() > (4 << 20):
                        await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def run(self) -> None:
        server = await asyncio.start_server(self.serve, "127.0.0.1", self.port, reuse_address=True,
                                            limit=1 << 20)
        self.port = server.sockets[0].getsockname()[1]
        print(f"LISTENING {self.port}", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        async with server:
            await stop.wait()


class NullBroker:
    """Run the null broker as a subprocess (``python -m benchmarks.null_broker``)."""

    def __init__(self, partitions: int = 1, topic: str = "bench", port: int = 0) -> None:
        self.partitions, self.topic, self.port = partitions, topic, port
        self.proc: subprocess.Popen | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def start(self, timeout_s: float = 20.0) -> NullBroker:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.null_broker", "--port", str(self.port),
             "--partitions", str(self.partitions), "--topic", self.topic],
            cwd=ROOT, stdout=subprocess.PIPE, text=True, start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"})
        import select
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout_s)
        line = self.proc.stdout.readline() if ready else ""
        if not line.startswith("LISTENING"):
            self.stop()
            raise RuntimeError(f"null broker did not start (got {line!r})")
        self.port = int(line.split()[1])
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def __enter__(self) -> NullBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="benchmarks.null_broker", description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free port)")
    p.add_argument("--partitions", type=int, default=1)
    p.add_argument("--topic", default="bench")
    args = p.parse_args(argv)
    asyncio.run(NullBrokerServer(args.port, args.partitions, args.topic).run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
