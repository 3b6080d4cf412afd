"""The monitor: wires the services (Xinfra's SingleClusterMonitor) and serves /metrics.

Start order as Xinfra: topic management first (its first pass creates the topic), then, once every broker knows
the topic (where Xinfra sleeps 2 s), produce, consume, offset-commit and the SLI sink. Stop in reverse; the sink
writes the last, partial interval on the way out.
"""

from __future__ import annotations

import logging
import sys
import time
from http.server import ThreadingHTTPServer

from common.clock import SYSTEM, Clock
from exporter.http import registry_exposition, serve_threaded
from xmonitor.config import MonitorConfig
from xmonitor.metrics import Recorder
from xmonitor.payload import new_run_id
from xmonitor.services.base import Service
from xmonitor.services.consume import ConsumeService
from xmonitor.services.offset_commit import OffsetCommitService
from xmonitor.services.produce import ProduceService
from xmonitor.services.sli_sink import SliSinkService
from xmonitor.services.topic_management import TopicManagementService
from xmonitor.txn import TransactionalProduceService

log = logging.getLogger("xmonitor")

# The probe's clocks are read in Python threads; CPython makes a thread that wants the GIL wait up to the switch
# interval (5 ms by default) while another runs Python code (the sink folding events, a scrape), which would add up
# to 5 ms to a record's measured delay (one run at 30 partitions: e2e p99 10.0 → 4.7 ms with 0.5 ms).
GIL_SWITCH_INTERVAL_S = 0.0005


class XMonitor:
    def __init__(self, cfg: MonitorConfig, clock: Clock = SYSTEM, run_id: str | None = None) -> None:
        if cfg.produce_transactional_enabled:   # read back what committed transactions made visible (KIP-98)
            cfg = cfg.with_overrides(consume_consumer_props={"isolation.level": "read_committed",
                                                             **cfg.consume_consumer_props})
        self.cfg = cfg.validate()
        self.clock = clock
        self.run_id = run_id or new_run_id()
        self.rec = Recorder(cfg, self.run_id, clock)
        self.topic_management = TopicManagementService(cfg, self.rec, clock) if cfg.topic_management_enabled else None
        self.produce: ProduceService
        self.consume = ConsumeService(cfg, self.rec, clock)
        if cfg.produce_transactional_enabled:
            txn = TransactionalProduceService(cfg, self.rec, self.run_id, clock)
            self.consume.on_probe = txn.on_consumed
            self.produce = txn
        else:
            self.produce = ProduceService(cfg, self.rec, self.run_id, clock)
        self.offset_commit = OffsetCommitService(cfg, self.rec, clock) if cfg.offset_commit_enabled else None
        self.sli_sink = SliSinkService(cfg, self.rec, clock)
        self._http: ThreadingHTTPServer | None = None
        self.port: int | None = None

    @property
    def services(self) -> list[Service]:
        return [s for s in (self.topic_management, self.produce, self.consume, self.offset_commit, self.sli_sink)
                if s is not None]

    def start(self, topic_timeout_s: float = 60.0) -> XMonitor:
        sys.setswitchinterval(min(sys.getswitchinterval(), GIL_SWITCH_INTERVAL_S))
        if self.cfg.listener is not None:
            host, port = self.cfg.listener
            web = self.cfg.web_config()
            self._http = serve_threaded(registry_exposition(self.rec.registry), host, port, name="xmonitor-http",
                                        web_config=web)
            self.port = self._http.server_port
            log.info("xmonitor: /metrics on %s://%s:%d/metrics", "https" if web and web.tls else "http", host,
                     self.port)
        if self.topic_management is not None:
            deadline = self.clock.monotonic() + topic_timeout_s
            while not self.topic_management.run_pass_safely():
                if self.clock.monotonic() > deadline:
                    raise RuntimeError(f"topic management could not set up {self.cfg.topic!r}")
                time.sleep(1.0)
            while not self.topic_management.propagated_safely():
                if self.clock.monotonic() > deadline:
                    log.warning("xmonitor: %s is not yet known to every broker; probing anyway", self.cfg.topic)
                    break
                time.sleep(0.1)
        for s in self.services:
            s.start()
        log.info("xmonitor: run %s monitoring topic %s of %s", self.run_id, self.cfg.topic, self.cfg.cluster_name)
        return self

    def stop(self, drain_s: float = 2.0) -> None:
        """Stop producing first, let the consumer read what was acknowledged (up to `drain_s`), then stop the
        rest; the SLI sink goes last so its final file holds every counted event."""
        for s in (self.topic_management, self.produce, self.offset_commit):
            if s is not None:
                s.stop()
                s.join(30)
        deadline = self.clock.monotonic() + drain_s
        while self.consume.running and self.clock.monotonic() < deadline:
            consumed, produced = self.rec.consumed_and_produced()
            if consumed >= produced:
                break
            time.sleep(0.05)
        for s in (self.consume, self.sli_sink):
            s.stop()
            s.join(30)
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            self._http = None

    def __enter__(self) -> XMonitor:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
