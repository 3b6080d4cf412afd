"""SLI sink service: every `sli.interval.ms`, close the interval and write its rows (one per partition)."""

from __future__ import annotations

from xmonitor import sink
from xmonitor.services.base import Service, log


class SliSinkService(Service):
    name = "sli-sink"

    def run(self) -> None:
        if self.cfg.sli_dir:
            try:
                sink.warm_up()
            except Exception as e:  # noqa: BLE001 - only a warm-up: the real writes report their own errors
                log.warning("sli-sink: warm-up failed: %s", e)
        while not self.wait(self.cfg.sli_interval_ms / 1000.0):
            self.flush()

    def flush(self) -> None:
        rows = self.rec.roll_interval()
        if self.cfg.sli_dir:
            try:
                sink.write_rows(self.cfg.sli_dir, rows)
            except OSError as e:
                log.warning("sli-sink: cannot write %s: %s", self.cfg.sli_dir, e)
                return
        self.rec.cycle_ok(self.name)

    def close(self) -> None:
        self.flush()      # the last (partial) interval
