"""A tiny raw Kafka client for wire-level tests: kio-encoded requests over a plain socket."""

from __future__ import annotations

import io
import socket
import struct
from typing import Any

from kio.serial import entity_reader, entity_writer

from broker.protocol.codec import build, request_class, response_class
from common.wire import recv_frame


class WireClient:
    def __init__(self, port: int, timeout_s: float = 10.0, host: str = "127.0.0.1") -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout_s)
        self._corr = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(self, api_key: int, version: int, body: dict[str, Any], client_id: str = "wire-test") -> int:
        cls = request_class(api_key, version)
        self._corr += 1
        out = io.BytesIO()
        hdr_cls = cls.__header_schema__
        hdr_fields = {"request_api_key": api_key, "request_api_version": version, "correlation_id": self._corr,
                      "client_id": client_id}
        entity_writer(hdr_cls)(out, build(hdr_cls, hdr_fields))
        entity_writer(cls)(out, build(cls, body))
        self.send_raw(out.getvalue())
        return self._corr

    def send_raw(self, frame: bytes) -> None:
        self.sock.sendall(struct.pack(">i", len(frame)) + frame)

    def recv_frame(self) -> bytes:
        return recv_frame(self.sock)

    def recv(self, api_key: int, version: int) -> Any:
        frame = self.recv_frame()
        cls = response_class(api_key, version)
        hdr, n = entity_reader(cls.__header_schema__)(frame, 0)
        body, m = entity_reader(cls)(frame, n)
        assert n + m == len(frame), "trailing bytes in response"
        assert hdr.correlation_id == self._corr
        return body

    def call(self, api_key: int, version: int, body: dict[str, Any]) -> Any:
        self.send(api_key, version, body)
        return self.recv(api_key, version)

    def is_closed_by_peer(self, timeout_s: float = 5.0) -> bool:
        self.sock.settimeout(timeout_s)
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False
