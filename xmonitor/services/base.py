"""A service: one thread, a stop event, health reported as `xmonitor_service_up` / last successful cycle."""

from __future__ import annotations

import logging
import threading
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from common.clock import SYSTEM, Clock
from xmonitor.config import MonitorConfig
from xmonitor.metrics import Recorder

log = logging.getLogger("xmonitor")
_LIBRDKAFKA = logging.getLogger("xmonitor.librdkafka")   # client logs, not stderr (a dead broker is expected)


def client_base(cfg: MonitorConfig) -> dict[str, Any]:
    """Connection settings shared by every client (security settings go in client.props, once)."""
    return {"bootstrap.servers": cfg.bootstrap_servers, "logger": _LIBRDKAFKA, **cfg.client_props}


def error_name(err: KafkaError | KafkaException | BaseException) -> str:
    if isinstance(err, KafkaException) and err.args and isinstance(err.args[0], KafkaError):
        err = err.args[0]
    if isinstance(err, KafkaError):
        return err.name()
    return type(err).__name__


class Service:
    name = "service"

    def __init__(self, cfg: MonitorConfig, rec: Recorder, clock: Clock = SYSTEM) -> None:
        self.cfg, self.rec, self.clock = cfg, rec, clock
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None

    def start(self) -> None:
        self.rec.service_state(self.name, True)
        self._thread = threading.Thread(target=self._main, name=f"xmonitor-{self.name}", daemon=True)
        self._thread.start()

    def _main(self) -> None:
        try:
            self.run()
        except BaseException as e:  # a crashed service is reported, never silent
            self.error = e
            log.exception("xmonitor %s service stopped", self.name)
        finally:
            self.rec.service_state(self.name, False)
            try:
                self.close()
            except Exception:
                log.exception("closing %s", self.name)

    def run(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def stop(self) -> None:
        self._stop.set()

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def wait(self, seconds: float) -> bool:
        """Sleep up to `seconds`; True when asked to stop."""
        return self._stop.wait(max(seconds, 0.0))

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()
