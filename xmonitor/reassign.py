"""AlterPartitionReassignments (45) and ListPartitionReassignments (46) over the Kafka protocol, and Metadata (3)
to one chosen broker.

confluent-kafka 2.16's AdminClient has no alter/list_partition_reassignments (it has elect_leaders), so these two
requests are sent directly to the controller (found with describe_cluster) using kio's schemas; and its metadata
calls go to any broker, while topic management needs to ask each one whether it knows the monitor topic. Plain Kafka
protocol, nothing broker-specific: works against any Kafka ≥ 2.4. PLAINTEXT listeners only; with a
security.protocol other than PLAINTEXT topic management falls back to partition creation with explicit
assignments plus preferred leader election (see topic_logic.plan(can_reassign=False)).
"""

from __future__ import annotations

import datetime
import io
import socket
import struct
import sys
import threading
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i16, i32, i32Timedelta

from common.wire import recv_frame


class ReassignError(RuntimeError):
    pass


class ReassignClient:
    def __init__(self, host: str, port: int, timeout_s: float = 10.0, client_id: str = "xmonitor") -> None:
        self.addr, self.timeout_s, self.client_id = (host, port), timeout_s, client_id
        self._corr = 0
        self._lock = threading.Lock()

    def _call(self, api_key: int, body_builder, version: int = 0) -> Any:
        req_cls, resp_cls = load_request_schema(api_key, version), load_response_schema(api_key, version)
        with self._lock, socket.create_connection(self.addr, timeout=self.timeout_s) as sock:
            self._corr += 1
            hdr_cls = req_cls.__header_schema__
            out = io.BytesIO()
            entity_writer(hdr_cls)(out, hdr_cls(request_api_key=i16(api_key), request_api_version=i16(version),
                                                correlation_id=i32(self._corr), client_id=self.client_id))
            entity_writer(req_cls)(out, body_builder(req_cls))
            frame = out.getvalue()
            sock.sendall(struct.pack(">i", len(frame)) + frame)
            data = recv_frame(sock)
        _hdr, n = entity_reader(resp_cls.__header_schema__)(data, 0)
        body, _ = entity_reader(resp_cls)(data, n)
        return body

    def list_reassignments(self) -> dict[str, dict[int, tuple[int, ...]]]:
        """Every ongoing reassignment in the cluster: topic -> partition -> target replicas."""
        def build(cls):
            return cls(timeout=i32Timedelta.parse(datetime.timedelta(milliseconds=int(self.timeout_s * 1000))),
                       topics=None)
        resp = self._call(46, build)
        if int(resp.error_code) != 0:
            raise ReassignError(f"ListPartitionReassignments: {resp.error_code!r} {resp.error_message or ''}")
        return {t.name: {int(p.partition_index): tuple(int(r) for r in p.replicas) for p in t.partitions}
                for t in resp.topics}

    def alter(self, topic: str, assignments: dict[int, list[int] | None]) -> dict[int, str]:
        """Start reassignments; returns partition -> error name for partitions that failed."""
        def build(cls):
            mod = sys.modules[cls.__module__]
            parts = tuple(mod.ReassignablePartition(partition_index=i32(p),
                                                    replicas=None if r is None else tuple(i32(x) for x in r))
                          for p, r in sorted(assignments.items()))
            return cls(timeout=i32Timedelta.parse(datetime.timedelta(milliseconds=int(self.timeout_s * 1000))),
                       topics=(mod.ReassignableTopic(name=topic, partitions=parts),))
        resp = self._call(45, build)
        if int(resp.error_code) != 0:
            raise ReassignError(f"AlterPartitionReassignments: {resp.error_code!r} {resp.error_message or ''}")
        return {int(p.partition_index): p.error_code.name for t in resp.responses for p in t.partitions
                if int(p.error_code) != 0}


    def topic_leaders(self, topic: str) -> dict[int, int] | None:
        """This broker's view of `topic` (Metadata v4, no auto-creation): partition -> leader id (-1: none); None
        while the broker does not know the topic."""
        def build(cls):
            mod = sys.modules[cls.__module__]
            return cls(topics=(mod.MetadataRequestTopic(name=topic),), allow_auto_topic_creation=False)
        resp = self._call(3, build, version=4)
        t = next((t for t in resp.topics if t.name == topic), None)
        if t is None or int(t.error_code) != 0:
            return None
        return {int(p.partition_index): int(p.leader_id) for p in t.partitions}
